"""peer_model.py: what the PyTorch peers of bitpipe share.

torch_step.py (one process) and torch_pipeline.py (torch.distributed.pipelining)
train the same model on the same windows with the same update as a bitpipe
run; the rules, and where bitpipe states each, are listed in torch_step.py's
docstring and in bench/peers/README.md. This module holds the pieces both
need, so that each rule is written once:

- the command-line arguments that describe a training run;
- transformers imported offline;
- the model class and its configuration for a --save-hf folder (eager
  attention, dropout 0);
- the token windows of each micro-batch (the end-to-end tests' reference
  sampler, test/EndToEnd/reference/batches.py);
- the AdamW optimizer with bitpipe's decay groups;
- clipping with bitpipe's factor;
- peak RSS.

Imports torch lazily (inside functions), so that --help works without it.
"""

import json
import os
import resource
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "EndToEnd", "reference"))
from batches import Batches  # noqa: E402


def rss_mib():
    """This process's peak resident set, MiB (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def add_run_args(p):
    """The arguments that say what to train: the same for every peer."""
    p.add_argument("--hf", required=True, help="folder bitpipe's --save-hf wrote")
    p.add_argument("--data", required=True, help="flat token file")
    p.add_argument("--data-dtype", choices=["u16", "u32"], default="u16")
    p.add_argument("--seq-len", type=int, required=True, help="T (the compiled model's)")
    p.add_argument("--microbatch-size", type=int, required=True, help="B (the compiled model's)")
    p.add_argument("--microbatches", type=int, required=True, help="N per step (the compiled program's)")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-grad-norm", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sampling", choices=["random", "sequential"], default="random")
    p.add_argument("--metrics", help="also write the step lines to this file")
    p.add_argument("--label", default="", help="a name carried in the summary line")


def check_run_args(p, a):
    for k in ("seq_len", "microbatch_size", "microbatches"):
        if getattr(a, k) <= 0:
            p.error("--%s must be positive" % k.replace("_", "-"))
    if a.steps < 0 or a.seed < 0:
        p.error("--steps and --seed must not be negative")


def offline_transformers():
    """transformers, imported to read local folders only, without progress
    bars (the peers never download)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers

    transformers.utils.logging.disable_progress_bar()
    return transformers


def model_class(hf, prog):
    """(transformers class, its dropout overrides, model_type) of a folder.

    Only next-token models: GPT-2 and LLaMA. The dropout fields of bitpipe's
    config are 0 already; the overrides say so again, so that a hand-made
    folder cannot switch dropout on.
    """
    import transformers

    with open(os.path.join(hf, "config.json")) as f:
        mtype = json.load(f).get("model_type")
    if mtype == "gpt2":
        return (transformers.GPT2LMHeadModel,
                {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "summary_first_dropout": 0.0},
                mtype)
    if mtype == "llama":
        return transformers.LlamaForCausalLM, {"attention_dropout": 0.0}, mtype
    sys.exit("%s: model_type %r: only gpt2 and llama (next-token models) are handled" % (prog, mtype))


def check_no_dropout(model, prog):
    import torch

    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Dropout) and mod.p != 0.0:
            sys.exit("%s: %s is a Dropout with p = %g" % (prog, name, mod.p))


def token_windows(a, vocab, prog):
    """batch(group) -> (inputs, targets), int64 tensors of B x T.

    Micro-batch m of step s is sample group s * N + m (one copy); GPT and
    LLaMA alike: next-token targets, one token of lookahead.
    """
    import numpy as np
    import torch

    data = np.fromfile(a.data, dtype="<u2" if a.data_dtype == "u16" else "<u4")
    if int(data.shape[0]) < a.seq_len + 1:
        sys.exit("%s: %s has %d tokens; a window needs %d" % (prog, a.data, int(data.shape[0]), a.seq_len + 1))
    if int(data.max()) >= vocab:
        sys.exit("%s: %s holds token %d, not below the vocabulary %d" % (prog, a.data, int(data.max()), vocab))
    windows = Batches(data, "gpt", a.microbatch_size, a.seq_len, vocab, a.seed, a.sampling)

    def batch(group):
        xs, ys = windows.get(group)
        return (torch.from_numpy(xs.astype(np.int64)), torch.from_numpy(ys.astype(np.int64)))

    return batch


def adamw(params, lr, weight_decay):
    """torch.optim.AdamW as bitpipe's update: betas (0.9, 0.999), eps 1e-8,
    decay on tensors of rank >= 2 only (the manifest's "decay" flag)."""
    import torch

    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.999), eps=1e-8)


def total_norm(grads):
    """The global L2 norm of the gradients: torch.nn.utils.get_total_norm
    where torch has it (2.6 on), else the same sum of per-tensor norms
    (torch 1.13, Debian 12's)."""
    import torch

    if hasattr(torch.nn.utils, "get_total_norm"):
        return torch.nn.utils.get_total_norm(grads)
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))


def clip_factor(norm, max_norm):
    """bitpipe's clipping (AdamW::beginStep): max / (norm + 1e-6) when the
    norm exceeds max, else 1; torch.nn.utils.clip_grad_norm_'s factor."""
    if max_norm > 0 and norm > max_norm:
        return max_norm / (norm + 1e-6)
    return 1.0
