#!/usr/bin/env python3
"""torch_step.py: the PyTorch / Hugging Face peer of a one-rank bitpipe run.

Trains the model that a bitpipe executable wrote with --save-hf (DIR/config.json
and DIR/model.safetensors) with the real transformers class (GPT2LMHeadModel,
LlamaForCausalLM; fp32, eager attention) and torch.optim.AdamW, on the same
token windows in the same order and with the same update as the bitpipe run
(docs/training-semantics.md), and prints one JSON line per step and one
summary line:

  {"step": 1, "loss": ..., "grad_norm": ..., "tokens_per_s": ..., "seconds": ...}
  {"summary": true, "peak_rss_mib": ..., "rss_after_load_mib": ..., ...}

--model plain trains bench/peers/plain_model.py's GPT-2 and LLaMA instead
(the same graphs in plain PyTorch, no transformers): the peer that Debian's
own python3-torch (1.13) can run, which has no transformers and no
torch.compile.

Run it with the peer environment's python (bench/peers/setup.sh --print-dir):

  PY=$(bench/peers/setup.sh --print-dir)/bin/python
  $PY bench/peers/torch_step.py --hf DIR --data tokens.bin --seq-len 128 \
      --microbatch-size 4 --microbatches 4 --steps 12 [--lr 1e-3] \
      [--weight-decay 0.01] [--max-grad-norm 0] [--seed 0] \
      [--sampling random|sequential] [--threads 1] [--compile] [--metrics PATH]
      [--dtype float32|float64] [--save-hf DIR] [--model transformers|plain]

What bitpipe does, and where it says so (each is matched here):

- Data (runtime/lib/train/TokenDataset.cpp, InputLoader.cpp;
  docs/training-semantics.md, "The data"): micro-batch m of step s (0-based,
  one copy) is sample group g = s * N + m; row b starts at offset
  o(g, b) = bits(seed, S ^ mix64(g), b) mod (n - (T + 1) + 1) for random
  sampling, S = 0x73616d706c657273, bits(seed, stream, c) =
  mix64(mix64(mix64(seed) ^ stream) ^ c), mix64 SplitMix64's finaliser; or
  ((g * B + b) mod W) * T, W = (n - 1) // T, for sequential sampling. The
  inputs are file[o, o + T), the targets file[o + 1, o + T + 1).
- Loss: a micro-batch's loss is the mean cross-entropy over its B x T
  positions; the step's loss is the mean of its N micro-batch losses, and its
  gradient the mean of their gradients (Executor::optimizerStep divides the
  summed gradients by N; AdamW.h). The targets are given to cross_entropy
  directly (not as Hugging Face's labels, which it would shift again).
- grad_norm: the global L2 norm of the mean gradient over every parameter
  (each once: GPT-2's tied lm_head is wte), before clipping.
- Clipping (AdamW.cpp, beginStep): when --max-grad-norm is positive and the
  norm exceeds it, the gradient is scaled by max / (norm + 1e-6):
  torch.nn.utils.clip_grad_norm_'s factor (which clamps it at 1).
- AdamW (AdamW.cpp): torch.optim.AdamW's update, betas (0.9, 0.999), eps
  1e-8 (the executable has no flags for them), bias corrections in the
  same form (lr / (1 - beta1^t), sqrt(v) / sqrt(1 - beta2^t) + eps), the
  decay p *= 1 - lr * wd applied before the moment update.
- Decay: parameters of rank >= 2 (matrices and embeddings), not vectors
  (biases, norm gains and biases): the manifest's "decay" flag
  (lib/Conversion/ProgramToRuntime/Manifest.cpp, decay = rank >= 2;
  docs/models.md).
- No dropout (bitpipe trains without it; --save-hf writes dropout 0); the
  model is in train() mode and every Dropout module is checked to be p = 0.

Not matched, on purpose: bitpipe accumulates the micro-batch gradients in
float64 and PyTorch in float32, and the kernels sum in other orders, so the
losses agree to about 1e-7 at first and drift apart slowly as AdamW
amplifies the differences of near-zero gradients.

The step's time runs from the zeroing of the gradients to the end of the
optimizer step, the batches' making included (bitpipe's step time includes
its input loading too). Peak RSS: getrusage(RUSAGE_SELF).ru_maxrss of this
process (the interpreter and torch's libraries included; rss_after_load_mib
says how much of it was there before the first step).
"""

import argparse
import json
import sys
import time

from peer_model import (add_run_args, adamw, check_no_dropout, check_run_args,
                        model_class, offline_transformers, rss_mib,
                        token_windows, total_norm)

PROG = "torch_step.py"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_args(p)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1: one bitpipe rank)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                   help="float64: a reference run of the same semantics in double precision")
    p.add_argument("--compile", action="store_true", help="torch.compile the loss function (model included), mode default")
    p.add_argument("--save-hf", help="at the end, write the trained weights here (save_pretrained, float32)")
    p.add_argument("--model", choices=["transformers", "plain"], default="transformers",
                   help="transformers' classes (default), or plain_model.py's (no transformers needed)")
    a = p.parse_args(argv)
    check_run_args(p, a)
    if a.threads <= 0:
        p.error("--threads must be positive")
    if a.model == "plain" and a.save_hf:
        p.error("--save-hf writes with transformers' save_pretrained: not with --model plain")
    return a


def main(argv):
    a = parse_args(argv)
    t_import = time.perf_counter()
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)  # nothing here draws; dropout is off
    if a.compile and not hasattr(torch, "compile"):
        sys.exit("%s: --compile: torch %s has no torch.compile" % (PROG, torch.__version__))

    dtype = torch.float64 if a.dtype == "float64" else torch.float32
    transformers = None
    if a.model == "plain":
        import plain_model

        model, cfg = plain_model.load(a.hf, dtype, PROG)
        mtype = cfg.model_type
        forward = model
    else:
        transformers = offline_transformers()
        cls, drop, mtype = model_class(a.hf, PROG)
        model = cls.from_pretrained(a.hf, attn_implementation="eager", dtype=dtype, **drop)
        cfg = model.config

        def forward(x):
            return model(input_ids=x).logits
    model.train()
    check_no_dropout(model, PROG)
    max_pos = getattr(cfg, "n_positions", None) or cfg.max_position_embeddings
    if a.seq_len > max_pos:
        sys.exit("%s: --seq-len %d exceeds the model's %d positions" % (PROG, a.seq_len, max_pos))

    # Parameters, each once (a tied head is the embedding).
    params = list(model.parameters())
    opt = adamw(params, a.lr, a.weight_decay)
    n_params = sum(p.numel() for p in params)
    B, T, N = a.microbatch_size, a.seq_len, a.microbatches
    batch = token_windows(a, cfg.vocab_size, PROG)

    def loss_fn(x, y):
        logits = forward(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    step_loss = torch.compile(loss_fn) if a.compile else loss_fn
    rss_load = rss_mib()
    setup_s = time.perf_counter() - t_import

    out = open(a.metrics, "w") if a.metrics else None
    tokens = N * B * T
    compile_s = None
    for s in range(a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss_sum = 0.0
        for m in range(N):
            x, y = batch(s * N + m)
            loss = step_loss(x, y)
            (loss / N).backward()
            loss_sum += loss.item()
        if a.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, a.max_grad_norm)
        else:
            norm = total_norm([p.grad for p in params])
        opt.step()
        sec = time.perf_counter() - t0
        if a.compile and s == 0:
            compile_s = sec
        line = {"step": s + 1, "loss": loss_sum / N, "grad_norm": float(norm),
                "tokens_per_s": tokens / sec, "seconds": sec}
        text = json.dumps(line)
        print(text, flush=True)
        if out:
            out.write(text + "\n")
            out.flush()
    if out:
        out.close()
    if a.save_hf:
        model.to(torch.float32).save_pretrained(a.save_hf)
    summary = {"summary": True, "label": a.label, "model_type": mtype, "parameters": n_params, "dtype": a.dtype,
               "threads": torch.get_num_threads(), "compile": a.compile,
               "first_step_s_with_compile": compile_s, "setup_s": setup_s,
               "rss_after_load_mib": rss_load, "peak_rss_mib": rss_mib(),
               "torch": torch.__version__, "model": a.model,
               "transformers": transformers.__version__ if transformers else None}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
