#!/usr/bin/env python3
"""hf_gpt2.py: Hugging Face's GPT-2 graph (GPT2LMHeadModel in eval mode) in
float64, over a checkpoint in Hugging Face's own names and layout, written
from transformers' definition and sharing nothing with bitpipe's mapping
(runtime/lib/train/HuggingFace.cpp) or model.py:

  - Conv1D layers store their weight [in, out] and compute x W + b;
  - c_attn's output is split into q, k, v of n_embd columns each, each
    into n_head heads of consecutive columns;
  - GELU is gelu_new (tanh form); layer norms use epsilon 1e-5;
  - the logits are ln_f(h) wte^T (the head is tied).

  make  --config CONFIG --out FILE [--seed S]
        random GPT-2 weights of a bitpipe GPT config, named as GPT2Model
        writes them (the hub's gpt2 file: no "transformer." prefix, with the
        causal-mask buffers "h.<i>.attn.bias"), float32.
  loss  --config CONFIG --weights FILE --data TOKENS --seed S
        --microbatches N
        prints the mean loss of step 1's N micro-batches (one data-parallel
        copy, random sampling; docs/training-semantics.md).
"""
import argparse
import json
import math
import sys

import numpy as np

from batches import Batches, global_index
import safetensors_io

EPS = 1e-5


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi)
                                    * (x + 0.044715 * x ** 3)))


def conv1d(x, w, b):
    return x @ w + b


def forward_loss(p, n_head, ids, labels):
    """The mean next-token cross-entropy of GPT2LMHeadModel."""
    B, T = ids.shape
    h = p["wte.weight"][ids] + p["wpe.weight"][np.arange(T)][None]
    layers = len({k.split(".")[1] for k in p if k.startswith("h.")})
    for i in range(layers):
        pre = f"h.{i}."
        a = layer_norm(h, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"])
        qkv = conv1d(a, p[pre + "attn.c_attn.weight"],
                     p[pre + "attn.c_attn.bias"])
        E = qkv.shape[-1] // 3
        d = E // n_head
        q, k, v = (qkv[..., j * E:(j + 1) * E]
                   .reshape(B, T, n_head, d).transpose(0, 2, 1, 3)
                   for j in range(3))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, E)
        h = h + conv1d(o, p[pre + "attn.c_proj.weight"],
                       p[pre + "attn.c_proj.bias"])
        m = layer_norm(h, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
        m = gelu_new(conv1d(m, p[pre + "mlp.c_fc.weight"],
                            p[pre + "mlp.c_fc.bias"]))
        h = h + conv1d(m, p[pre + "mlp.c_proj.weight"],
                       p[pre + "mlp.c_proj.bias"])
    h = layer_norm(h, p["ln_f.weight"], p["ln_f.bias"])
    logits = h @ p["wte.weight"].T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, labels[..., None], -1).mean()


def make(config, out, seed):
    rng = np.random.default_rng(seed)
    H, V, P = config["hidden"], config["vocab"], config["max_positions"]
    # Larger than an initialisation's 0.02, so that every layer matters to
    # the loss; the norms' gains and biases random too.
    def normal(*shape, std=0.2):
        return rng.normal(0.0, std, shape)
    t = {"wte.weight": normal(V, H), "wpe.weight": normal(P, H),
         "ln_f.weight": 1.0 + normal(H), "ln_f.bias": normal(H)}
    for i in range(config["layers"]):
        pre = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            t[pre + ln + ".weight"] = 1.0 + normal(H)
            t[pre + ln + ".bias"] = normal(H)
        for name, fan_in, fan_out in (("attn.c_attn", H, 3 * H),
                                      ("attn.c_proj", H, H),
                                      ("mlp.c_fc", H, 4 * H),
                                      ("mlp.c_proj", 4 * H, H)):
            t[pre + name + ".weight"] = normal(fan_in, fan_out,
                                               std=1 / math.sqrt(fan_in))
            t[pre + name + ".bias"] = normal(fan_out)
        # The causal mask GPT2Model's older checkpoints carry.
        t[pre + "attn.bias"] = np.tril(np.ones((P, P)))[None, None]
    safetensors_io.write(out, t, {"format": "pt"})


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["make", "loss"])
    p.add_argument("--config", required=True)
    p.add_argument("--out")
    p.add_argument("--weights")
    p.add_argument("--data")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--microbatches", type=int, default=1)
    a = p.parse_args(argv)
    with open(a.config) as f:
        config = json.load(f)
    if a.command == "make":
        make(config, a.out, a.seed)
        return 0
    weights, _ = safetensors_io.read(a.weights)
    tokens = np.fromfile(a.data, dtype="<u2").astype(np.int64)
    batches = Batches(tokens, "gpt", config["microbatch_size"],
                      config["seq_len"], config["vocab"], a.seed, "random")
    losses = [forward_loss(weights, config["heads"],
                           *batches.get(global_index(0, 0, 1, m,
                                                     a.microbatches)))
              for m in range(a.microbatches)]
    print(repr(float(np.mean(losses))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
