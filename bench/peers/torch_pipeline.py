#!/usr/bin/env python3
"""torch_pipeline.py: the torch.distributed.pipelining peer of a bitpipe pipeline.

Trains the model that a bitpipe executable wrote with --save-hf, cut into
stages at the layers bitpipe's partition starts them (--starts), with one of
torch's pipeline schedules on gloo, one process per rank and one thread and
one core each, on the same windows with the same update as bitpipe
(torch_step.py's docstring lists the rules; peer_model.py holds them).
Start it with torchrun, one process per rank:

  PY=$(bench/peers/setup.sh --print-dir)/bin/python
  $PY -m torch.distributed.run --standalone --nproc-per-node 2 \\
      bench/peers/torch_pipeline.py --schedule 1f1b --starts 0,5 \\
      --hf DIR --data tokens.bin --seq-len 128 --microbatch-size 4 \\
      --microbatches 8 --steps 6 [--max-grad-norm 1] [--metrics PATH]

Rank 0 prints one JSON line per step and one summary line:

  {"step": 1, "loss": ..., "grad_norm": ..., "tokens_per_s": ...,
   "seconds": ..., "bubble": [rank 0's, rank 1's, ...]}
  {"summary": true, "peak_rss_mib": [per rank], ...}

Schedules, and where their stages live (R ranks):

  gpipe, 1f1b          R stages, stage s on rank s
  interleaved-1f1b,    2R stages, stage s on rank s mod R (torch's
  interleaved-zb       ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble)
  zbv, dualpipev       2R stages in a V: stage s on rank s for s < R, on
                       rank 2R - 1 - s after (ScheduleZBVZeroBubble,
                       ScheduleDualPipeV)

A stage is a run of bitpipe's layers: 0 the embedding (GPT-2: token and
position embeddings), 1 .. L the transformer blocks, L + 1 the head (final
norm, output projection; the loss is torch's loss_fn on its output). Each
rank builds only its stages: the model is made on the meta device and only
their tensors are read from the safetensors file, so a rank's memory is that
of its stages, as a bitpipe rank's is. The causal mask and (LLaMA) the rotary
embedding are made as transformers makes them for eager attention.

Where the head and the embedding of a tied GPT-2 lie on two ranks, each holds
a copy of the weight and their gradients are summed before the norm (the
copies then take the same update), as bitpipe sums a tied embedding's
contributions (docs/training-semantics.md).

Step time: rank 0, from the step's start to the end of the update and the
loss's all-reduce; the batches' making included. Bubble: per rank, 1 - busy
/ step time, busy being the time in the stage's forward, backward (input and
weight) and loss calls and in the update, which is how bitpipe's step lines
measure it (runtime/lib/train/StepLog.cpp: forward, backward and optimizer
spans). Peak RSS: each rank's ru_maxrss (the interpreter and torch's
libraries included; rss_after_load_mib is before the first step).
"""

import argparse
import json
import math
import os
import sys
import time

from peer_model import (add_run_args, adamw, check_run_args, clip_factor,
                        model_class, offline_transformers, rss_mib,
                        token_windows)

PROG = "torch_pipeline.py"

# name: (torch class, placement)
SCHEDULES = {
    "gpipe": ("ScheduleGPipe", "single"),
    "1f1b": ("Schedule1F1B", "single"),
    "interleaved-1f1b": ("ScheduleInterleaved1F1B", "loop"),
    "interleaved-zb": ("ScheduleInterleavedZeroBubble", "loop"),
    "zbv": ("ScheduleZBVZeroBubble", "v"),
    "dualpipev": ("ScheduleDualPipeV", "v"),
}


def num_stages(placement, ranks):
    return ranks if placement == "single" else 2 * ranks


def rank_of(placement, stage, ranks):
    if placement == "single":
        return stage
    if placement == "loop":
        return stage % ranks
    return stage if stage < ranks else 2 * ranks - 1 - stage


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_args(p)
    p.add_argument("--schedule", required=True, choices=sorted(SCHEDULES))
    p.add_argument("--starts", required=True,
                   help="first layer of each stage, comma-separated, from 0 (bitpipe's partition: "
                        "0 the embedding, 1..L the blocks, L+1 the head)")
    a = p.parse_args(argv)
    check_run_args(p, a)
    try:
        a.starts = [int(x) for x in a.starts.split(",")]
    except ValueError:
        p.error("--starts %r: comma-separated layer numbers" % a.starts)
    return a


def check_starts(starts, stages, layers):
    """The stage cut: `stages` increasing first layers from 0, each below L + 2."""
    if len(starts) != stages:
        sys.exit("%s: --starts has %d stages; the schedule has %d" % (PROG, len(starts), stages))
    if starts[0] != 0 or any(b <= a for a, b in zip(starts, starts[1:])) or starts[-1] > layers + 1:
        sys.exit("%s: --starts %s: increasing from 0, each at most %d (the head)"
                 % (PROG, ",".join(map(str, starts)), layers + 1))


class Parts:
    """The model's modules by bitpipe layer, made on the meta device."""

    def __init__(self, model, mtype):
        self.mtype = mtype
        if mtype == "gpt2":
            body = model.transformer
            self.embed = {"wte": body.wte, "wpe": body.wpe}
            self.blocks = body.h
            self.norm = body.ln_f
        else:
            body = model.model
            self.embed = {"embed_tokens": body.embed_tokens}
            self.blocks = body.layers
            self.norm = body.norm
            self.rotary = body.rotary_emb
        self.head = model.lm_head
        self.body_prefix = "transformer." if mtype == "gpt2" else "model."

    def layers(self):
        return len(self.blocks)


def build_stage(parts, first, last, config, tensors):
    """The nn.Module of bitpipe layers first..last, its tensors loaded."""
    import torch
    from torch import nn

    L = parts.layers()
    dtype = torch.float32

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.has_embed = first == 0
            self.has_head = last == L + 1
            lo, hi = max(first, 1) - 1, min(last, L)  # blocks [lo, hi)
            self.blocks = nn.ModuleList(parts.blocks[i] for i in range(lo, hi))
            self.embed = nn.ModuleDict(parts.embed) if self.has_embed else None
            self.norm = parts.norm if self.has_head else None
            self.head = parts.head if self.has_head else None
            self.block_range = (lo, hi)

        def forward(self, x):
            T = x.shape[1]
            pos = torch.arange(T).unsqueeze(0)
            if self.has_embed:
                if parts.mtype == "gpt2":
                    h = self.embed["wte"](x) + self.embed["wpe"](pos)
                else:
                    h = self.embed["embed_tokens"](x)
            else:
                h = x
            if len(self.blocks):
                # transformers' eager causal mask: the dtype's minimum above
                # the diagonal, added to the scores.
                mask = torch.full((T, T), torch.finfo(h.dtype).min, dtype=h.dtype).triu(1)[None, None]
                if parts.mtype == "gpt2":
                    for blk in self.blocks:
                        h = blk(h, attention_mask=mask)
                else:
                    rope = self.rope(h, pos)
                    for blk in self.blocks:
                        h = blk(h, attention_mask=mask, position_ids=pos, position_embeddings=rope)
            if self.has_head:
                h = self.head(self.norm(h))
            return h

    stage = Stage()
    stage.to_empty(device="cpu")
    if parts.mtype == "llama" and len(stage.blocks):
        # A buffer computed at construction (inv_freq), not in the file:
        # made again on the CPU, as transformers makes it.
        stage.rope = type(parts.rotary)(config=config)
    # Every parameter of the stage from the file, by its name in the model.
    names = {}
    lo = stage.block_range[0]
    blocks_key = parts.body_prefix + ("h" if parts.mtype == "gpt2" else "layers")
    for n, p in stage.blocks.named_parameters():
        i, rest = n.split(".", 1)  # "3.attn.c_attn.weight": the stage's block 3
        names["%s.%d.%s" % (blocks_key, lo + int(i), rest)] = p
    if stage.has_embed:
        for k, mod in stage.embed.items():
            names[parts.body_prefix + k + ".weight"] = mod.weight
    if stage.has_head:
        names[parts.body_prefix + ("ln_f" if parts.mtype == "gpt2" else "norm") + ".weight"] = stage.norm.weight
        if getattr(stage.norm, "bias", None) is not None:
            names[parts.body_prefix + "ln_f.bias"] = stage.norm.bias
        tied = config.tie_word_embeddings
        head_key = (parts.body_prefix + ("wte" if parts.mtype == "gpt2" else "embed_tokens") + ".weight"
                    if tied else "lm_head.weight")
        if stage.has_embed and tied:
            # One stage with both ends: one tensor, as in the model.
            emb = stage.embed["wte" if parts.mtype == "gpt2" else "embed_tokens"]
            stage.head.weight = emb.weight
        else:
            names.setdefault(head_key, stage.head.weight)
    with torch.no_grad():
        for key, p in names.items():
            if key not in tensors:
                sys.exit("%s: the model file has no %s" % (PROG, key))
            t = tensors[key]
            if tuple(t.shape) != tuple(p.shape):
                sys.exit("%s: %s is %s in the file, %s in the model" % (PROG, key, tuple(t.shape), tuple(p.shape)))
            p.copy_(t.to(dtype))
    for n, p in stage.named_parameters():
        if p.is_meta:
            sys.exit("%s: stage parameter %s was not loaded" % (PROG, n))
    # to_empty leaves buffers uninitialised: only the rotary embedding's,
    # made above, may be there.
    for n, _ in stage.named_buffers():
        if not n.startswith("rope."):
            sys.exit("%s: stage buffer %s is neither in the model file nor made here" % (PROG, n))
    return stage


def main(argv):
    a = parse_args(argv)
    t_import = time.perf_counter()
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from safetensors import safe_open
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules as pipe_schedules

    transformers = offline_transformers()
    rank = int(os.environ.get("RANK", "-1"))
    world = int(os.environ.get("WORLD_SIZE", "-1"))
    if rank < 0 or world < 2:
        sys.exit("%s: start it with torchrun and at least 2 processes (RANK, WORLD_SIZE unset or < 2)" % PROG)
    # One thread and one core per rank, as a bitpipe rank under
    # mpirun --bind-to core with OPENBLAS_NUM_THREADS=1.
    torch.set_num_threads(1)
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= world:
        os.sched_setaffinity(0, {cores[rank]})
    dist.init_process_group("gloo", rank=rank, world_size=world)

    cls_name, placement = SCHEDULES[a.schedule]
    stages_n = num_stages(placement, world)
    cls, drop, mtype = model_class(a.hf, PROG)
    config = cls.config_class.from_pretrained(a.hf, attn_implementation="eager", **drop)
    config._attn_implementation = "eager"
    with torch.device("meta"):
        model = cls(config)
    parts = Parts(model, mtype)
    L = parts.layers()
    check_starts(a.starts, stages_n, L)
    max_pos = getattr(config, "n_positions", None) or config.max_position_embeddings
    if a.seq_len > max_pos:
        sys.exit("%s: --seq-len %d exceeds the model's %d positions" % (PROG, a.seq_len, max_pos))

    mine = [s for s in range(stages_n) if rank_of(placement, s, world) == rank]
    bounds = a.starts + [L + 2]
    files = sorted(f for f in os.listdir(a.hf) if f.endswith(".safetensors"))
    tensors = {}
    for f in files:
        with safe_open(os.path.join(a.hf, f), "pt") as st:
            for k in st.keys():
                tensors[k] = st.get_tensor(k)
    modules = {}
    for s in mine:
        modules[s] = build_stage(parts, bounds[s], bounds[s + 1] - 1, config, tensors)
    # A tied embedding's two ends (stage 0's embedding, the last stage's
    # head) are two copies, also where one rank holds both (the V
    # schedules): torch's split backward (stage_backward_weight) does not
    # sum a parameter shared by two stages of a rank. Their gradients are
    # summed after the schedule's step instead (below).
    first_rank, last_rank = rank_of(placement, 0, world), rank_of(placement, stages_n - 1, world)
    tied = bool(getattr(config, "tie_word_embeddings", False))
    del tensors, model
    for m in modules.values():
        m.train()

    group = dist.group.WORLD
    pipe_stages = [PipelineStage(modules[s], s, stages_n, torch.device("cpu"), group=group) for s in mine]

    def loss_fn(logits, y):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    N, B, T = a.microbatches, a.microbatch_size, a.seq_len
    cls_sched = getattr(pipe_schedules, cls_name)
    try:
        if placement == "single":
            schedule = cls_sched(pipe_stages[0], N, loss_fn=loss_fn, scale_grads=True)
        else:
            schedule = cls_sched(pipe_stages, N, loss_fn=loss_fn, scale_grads=True)
    except (ValueError, RuntimeError) as e:
        sys.exit("%s: torch's %s refuses %d stages on %d ranks with %d micro-batches: %s"
                 % (PROG, cls_name, stages_n, world, N, e))

    # Busy time: the stages' compute calls and the update.
    busy = [0.0]

    def timed(fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                busy[0] += time.perf_counter() - t
        return wrapper

    for st in pipe_stages:
        for name in ("forward_one_chunk", "backward_one_chunk", "backward_weight_one_chunk"):
            if hasattr(st, name):
                setattr(st, name, timed(getattr(st, name)))
    if hasattr(schedule, "_maybe_compute_loss"):
        schedule._maybe_compute_loss = timed(schedule._maybe_compute_loss)

    # Parameters, each once on this rank. The tied copies: the embedding's
    # on the first stage's rank, the head's on the last stage's.
    params, seen = [], set()
    for m in modules.values():
        for p in m.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    emb_copy = head_copy = tie_group = None
    if tied:
        if 0 in modules:
            emb_copy = modules[0].embed["wte" if mtype == "gpt2" else "embed_tokens"].weight
        if stages_n - 1 in modules:
            head_copy = modules[stages_n - 1].head.weight
        if first_rank != last_rank:
            tie_group = dist.new_group([first_rank, last_rank])

    def sum_tied_gradients():
        if emb_copy is not None and head_copy is not None:
            emb_copy.grad.add_(head_copy.grad)
            head_copy.grad.copy_(emb_copy.grad)
        elif emb_copy is not None or head_copy is not None:
            dist.all_reduce((emb_copy if emb_copy is not None else head_copy).grad, group=tie_group)

    # The norm counts the tied weight once: the head's copy is left out.
    norm_params = [p for p in params if p is not head_copy]
    opt = adamw(params, a.lr, a.weight_decay)
    n_params = sum(p.numel() for p in norm_params)
    batch = token_windows(a, config.vocab_size, PROG)
    rss_load = rss_mib()
    setup_s = time.perf_counter() - t_import

    out = open(a.metrics, "w") if (a.metrics and rank == 0) else None
    tokens = N * B * T
    for s in range(a.steps):
        dist.barrier()
        t0 = time.perf_counter()
        busy[0] = 0.0
        opt.zero_grad(set_to_none=False)
        xs, ys = zip(*(batch(s * N + m) for m in range(N)))
        x, y = torch.cat(xs), torch.cat(ys)
        losses = []
        kwargs = {}
        if rank == last_rank:
            kwargs = {"target": y, "losses": losses}
        if rank == first_rank:
            schedule.step(x, **kwargs)
        else:
            schedule.step(**kwargs)
        t_upd = time.perf_counter()
        if tied:
            sum_tied_gradients()
        sq = torch.zeros(1, dtype=torch.float64)
        for p in norm_params:
            if p.grad is not None:
                sq += p.grad.double().pow(2).sum()
        dist.all_reduce(sq)
        norm = math.sqrt(float(sq))
        f = clip_factor(norm, a.max_grad_norm)
        if f != 1.0:
            for p in params:
                if p.grad is not None:
                    p.grad.mul_(f)
        opt.step()
        busy[0] += time.perf_counter() - t_upd
        loss = torch.zeros(1, dtype=torch.float64)
        if rank == last_rank:
            loss[0] = sum(float(l.detach()) for l in losses) / N
        dist.all_reduce(loss)
        sec_local = time.perf_counter() - t0
        stats = torch.tensor([sec_local, busy[0]], dtype=torch.float64)
        gathered = [torch.zeros(2, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(gathered, stats)
        if rank == 0:
            sec = sec_local
            line = {"step": s + 1, "loss": float(loss[0]), "grad_norm": norm,
                    "tokens_per_s": tokens / sec, "seconds": sec,
                    "bubble": [max(0.0, 1.0 - float(g[1]) / float(g[0])) for g in gathered]}
            text = json.dumps(line)
            print(text, flush=True)
            if out:
                out.write(text + "\n")
                out.flush()
    if out:
        out.close()
    rss = torch.tensor([rss_mib(), rss_load], dtype=torch.float64)
    all_rss = [torch.zeros(2, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(all_rss, rss)
    counts = torch.tensor([float(n_params)], dtype=torch.float64)
    dist.all_reduce(counts)
    if rank == 0:
        summary = {"summary": True, "label": a.label, "schedule": a.schedule, "torch_class": cls_name,
                   "model_type": mtype, "ranks": world, "stages": stages_n, "starts": a.starts,
                   "parameters": int(counts[0]), "setup_s": setup_s,
                   "peak_rss_mib": [float(r[0]) for r in all_rss],
                   "rss_after_load_mib": [float(r[1]) for r in all_rss],
                   "torch": torch.__version__, "transformers": transformers.__version__}
        print(json.dumps(summary), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
