"""PyTorch eager's side of the training-step benchmark: whole AdamW steps of
the 24-layer GPT of bench/gpu/gpt-24l.json (hidden 2048, 16 heads, T 2048,
vocabulary 50304, micro-batch 4), bf16 autocast, as AMP trains it: fp32
weights, gradients and AdamW moments; bf16 matrix products and attention
under torch.autocast.

The model is docs/models.md's GPT, as bitpipe compiles it: learned
positions, pre-LN layers with biases, tanh GELU, final layer norm, output
projection tied to the token embedding; cross-entropy over every position.
AdamW: lr 1e-3, weight decay 0.01 on matrices only, betas (0.9, 0.999),
eps 1e-8 (docs/training-semantics.md), fused=True (PyTorch's fastest eager
AdamW; ours is fused too).

    python3 bench/gpu/torch_step.py [--config bench/gpu/gpt-24l.json]
                                    [--warmup K] [--steps K]

Prints, last:
    TORCHSTEP tokens_per_s=.. step_ms=.. peak_gib=.. params=..
tokens/s is the median over the timed steps (after warm-up) of the tokens
of one step (microbatch_size x seq_len) over the step's time (forward,
backward, optimizer step, each step synchronized); peak_gib is
torch.cuda.max_memory_allocated() over the whole run (weights, gradients,
moments, activations and temporaries: the bytes handed out by PyTorch's
allocator, not what it holds cached).
Exit status: 0 measured; 2 no torch or no CUDA device.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"torch_step: cannot import torch ({e})", file=sys.stderr)
    sys.exit(2)


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, eps):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden, eps=eps)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden, eps=eps)
        self.fc = torch.nn.Linear(hidden, 4 * hidden)
        self.out = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        d = h // self.heads
        qkv = self.qkv(self.ln1(x))
        q, k, v = qkv.view(b, t, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, h))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, eps = c["hidden"], c.get("layer_norm_epsilon", 1e-5)
        self.tokens = torch.nn.Embedding(c["vocab"], h)
        self.positions = torch.nn.Embedding(c["max_positions"], h)
        self.layers = torch.nn.ModuleList(
            Layer(h, c["heads"], eps) for _ in range(c["layers"]))
        self.final_ln = torch.nn.LayerNorm(h, eps=eps)
        # docs/models.md's initialisation.
        for name, p in self.named_parameters():
            if p.dim() == 1:
                torch.nn.init.ones_(p) if "ln" in name and name.endswith(
                    "weight") else torch.nn.init.zeros_(p)
            else:
                std = 0.02
                if name.endswith("proj.weight") or name.endswith("out.weight"):
                    std /= math.sqrt(2 * c["layers"])
                torch.nn.init.normal_(p, 0.0, std)

    def forward(self, tokens, labels):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        x = self.tokens(tokens) + self.positions(pos)
        for layer in self.layers:
            x = layer(x)
        logits = F.linear(self.final_ln(x), self.tokens.weight)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]),
                               labels.reshape(-1))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=os.path.join(here, "gpt-24l.json"))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_step: torch sees no CUDA device", file=sys.stderr)
        sys.exit(2)
    with open(args.config) as f:
        c = json.load(f)
    b, t, v = c["microbatch_size"], c["seq_len"], c["vocab"]

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = Gpt(c).cuda()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8, fused=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}: "
          f"{c['layers']} layers, hidden {c['hidden']}, {params / 1e9:.3f}B "
          f"parameters, micro-batch {b} x {t} tokens", flush=True)

    # Random tokens: the speed does not depend on them.
    data = torch.randint(0, v, (args.warmup + args.steps, b, t + 1),
                         device="cuda")
    torch.cuda.reset_peak_memory_stats()
    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(data[step, :, :-1], data[step, :, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        print(f"step {step + 1}: loss {loss.item():.4f}, {seconds * 1e3:.1f} "
              f"ms", flush=True)
        if step >= args.warmup:
            times.append(seconds)
    step_s = statistics.median(times)
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"TORCHSTEP tokens_per_s={b * t / step_s:.0f} "
          f"step_ms={step_s * 1e3:.1f} peak_gib={peak:.2f} params={params}",
          flush=True)


if __name__ == "__main__":
    main()
