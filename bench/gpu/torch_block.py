"""PyTorch eager's side of the block benchmark: one GPT block forward +
backward in bf16, TFLOP/s by flops.py's formula (the one
bitpipe-gpu-block-bench divides by), at flops.py's BLOCK_SHAPES.

The block is docs/models.md's GPT layer, as block-bench.cpp computes it:
pre-LN, fused qkv (with bias), causal scaled-dot-product attention, output
projection, residual, layer norm, 4H MLP with tanh GELU, residual. Weights,
activations and gradients are bf16 (the module is cast to bf16, as a bf16
layer of a mixed-precision model computes); the input requires a gradient,
as ours computes dx. Times are medians of CUDA-event timings per iteration
after warm-up iterations, as block-bench.cpp's.

    python3 bench/gpu/torch_block.py [--warmup K] [--iters K]

One line per shape, the same form as ours:
    TORCHBENCH block H=1024 nh=16 T=1024 B=8 attn=sdpa fwd_ms=.. bwd_ms=..
               ms=.. tflops=..
Exit status: 0 measured; 2 no torch or no CUDA device (the reason printed).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flops import BLOCK_SHAPES, block_flops  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the build machine has no torch
    print(f"torch_block: cannot import torch ({e})", file=sys.stderr)
    sys.exit(2)


class Block(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.fc = torch.nn.Linear(hidden, 4 * hidden)
        self.out = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        d = h // self.heads
        qkv = self.qkv(self.ln1(x))
        # [B, T, 3H] -> three [B, nh, T, d]: q, then k, then v, each split
        # into heads of d consecutive columns (runtime.h's layout).
        q, k, v = qkv.view(b, t, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b, t, h)
        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def measure(hidden, heads, seq_len, batch, warmup, iters):
    torch.manual_seed(0)
    block = Block(hidden, heads).cuda().to(torch.bfloat16)
    x = torch.randn(batch, seq_len, hidden, device="cuda",
                    dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(x) * 1e-2
    events = [[torch.cuda.Event(enable_timing=True) for _ in range(3)]
              for _ in range(warmup + iters)]
    for start, mid, end in events:
        start.record()
        y = block(x)
        mid.record()
        y.backward(dy)
        end.record()
    torch.cuda.synchronize()
    fwd = [s.elapsed_time(m) for s, m, _ in events[warmup:]]
    bwd = [m.elapsed_time(e) for _, m, e in events[warmup:]]
    total = [f + b for f, b in zip(fwd, bwd)]
    ms = statistics.median(total)
    tflops = block_flops(hidden, heads, seq_len, batch) / (ms * 1e-3) / 1e12
    print(f"TORCHBENCH block H={hidden} nh={heads} T={seq_len} B={batch} "
          f"attn=sdpa fwd_ms={statistics.median(fwd):.4f} "
          f"bwd_ms={statistics.median(bwd):.4f} ms={ms:.4f} "
          f"tflops={tflops:.1f}", flush=True)
    del block, x, dy, y
    torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_block: torch sees no CUDA device", file=sys.stderr)
        sys.exit(2)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}",
          flush=True)
    for shape in BLOCK_SHAPES:
        measure(*shape, args.warmup, args.iters)


if __name__ == "__main__":
    main()
