#!/usr/bin/env python3
"""check_gradients.py: the float64 reference's own backward against central
finite differences of its forward, for GPT, BERT (pre- and post-LN) and
LLaMA (grouped-query, untied and tied) on a model small enough to
difference every parameter element it samples. The reference is an
oracle for the compiled code; this keeps the oracle itself honest.
Exits non-zero naming the worst parameter when a gradient is wrong."""
import sys

import numpy as np

from batches import IGNORE_INDEX
from model import Transformer, make_model

H, HEADS, LAYERS, V, T, B = 8, 2, 2, 11, 5, 2


def random_params(rng, family, post=False):
    def normal(*shape):
        return rng.normal(0.0, 0.3, shape)

    # Post-LN: the embeddings' norm instead of the final one.
    norm = "embed.ln" if post else "final_ln"
    p = {"embed.tokens": normal(V, H), "embed.positions": normal(T + 2, H),
         norm + ".weight": 1 + normal(H), norm + ".bias": normal(H)}
    for i in range(LAYERS):
        n = f"layers.{i}."
        for ln in ("ln1", "ln2"):
            p[n + ln + ".weight"] = 1 + normal(H)
            p[n + ln + ".bias"] = normal(H)
        for name, out, inp in (("attn.qkv", 3 * H, H), ("attn.proj", H, H),
                               ("mlp.fc", 4 * H, H), ("mlp.proj", H, 4 * H)):
            p[n + name + ".weight"] = normal(out, inp)
            p[n + name + ".bias"] = normal(out)
    if family == "bert":
        p["head.dense.weight"] = normal(H, H)
        p["head.dense.bias"] = normal(H)
        p["head.ln.weight"] = 1 + normal(H)
        p["head.ln.bias"] = normal(H)
        p["head.bias"] = normal(V)
    return p


def random_llama_params(rng, kv_heads, tied, mlp=12):
    def normal(*shape):
        return rng.normal(0.0, 0.3, shape)

    d = H // HEADS
    p = {"embed.tokens": normal(V, H), "final_ln.weight": 1 + normal(H)}
    if not tied:
        p["head.weight"] = normal(V, H)
    for i in range(LAYERS):
        n = f"layers.{i}."
        p[n + "ln1.weight"] = 1 + normal(H)
        p[n + "ln2.weight"] = 1 + normal(H)
        p[n + "attn.qkv.weight"] = normal((HEADS + 2 * kv_heads) * d, H)
        p[n + "attn.proj.weight"] = normal(H, H)
        p[n + "mlp.gate.weight"] = normal(mlp, H)
        p[n + "mlp.up.weight"] = normal(mlp, H)
        p[n + "mlp.down.weight"] = normal(H, mlp)
    return p


def check(family, rng, samples_per_param=6, h=1e-6, kv_heads=HEADS,
          tied=False, layer_norm_position="pre"):
    if family == "llama":
        # A small base, so that the rotation angles differ a lot between
        # positions and features.
        model = make_model({"family": family, "layers": LAYERS,
                            "heads": HEADS, "kv_heads": kv_heads,
                            "rope_theta": 7.0, "tie_embeddings": tied})
        params = random_llama_params(rng, kv_heads, tied)
    else:
        model = Transformer({"family": family, "layers": LAYERS,
                             "heads": HEADS,
                             "layer_norm_position": layer_norm_position})
        params = random_params(rng, family, layer_norm_position == "post")
    inputs = rng.integers(0, V, (B, T))
    labels = rng.integers(0, V, (B, T))
    labels[0, 1] = labels[1, 3] = IGNORE_INDEX  # the ignore index is skipped
    _, grads = model.loss_and_grads(params, inputs, labels)
    worst, worst_name = 0.0, None
    for name, value in params.items():
        flat = value.reshape(-1)
        for i in rng.choice(flat.size, min(samples_per_param, flat.size),
                            replace=False):
            old = flat[i]
            flat[i] = old + h
            up, _ = model.loss_and_grads(params, inputs, labels)
            flat[i] = old - h
            down, _ = model.loss_and_grads(params, inputs, labels)
            flat[i] = old
            numeric = (up - down) / (2 * h)
            analytic = grads[name].reshape(-1)[i]
            err = abs(numeric - analytic) / max(1e-3, abs(numeric))
            if err > worst:
                worst, worst_name = err, f"{name}[{i}]"
    return worst, worst_name


def main():
    rng = np.random.default_rng(20261130)
    failed = False
    cases = [("gpt", {}), ("bert", {}),
             ("bert", {"layer_norm_position": "post"}),
             ("llama", {"kv_heads": 1}),
             ("llama", {"kv_heads": HEADS, "tied": True})]
    for family, options in cases:
        worst, where = check(family, rng, **options)
        ok = worst < 1e-5
        failed |= not ok
        name = family + "".join(f" {k}={v}" for k, v in options.items())
        print(f"{name}: worst relative error {worst:.2e} at {where}: "
              f"{'ok' if ok else 'WRONG'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
