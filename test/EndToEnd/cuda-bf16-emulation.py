#!/usr/bin/env python3
"""cuda-bf16-emulation.py TRAIN_REFERENCE_FLAGS...

Where cuda-match.sh's bf16 tolerances come from: the independent float64
reference (reference/train_reference.py, same flags) with bf16 rounding
(round to nearest even) wherever the CUDA target's bf16 mode stores bf16
(bitpipe/cuda.h's precision rules):
  - the weight copies the kernels read (the master weights and AdamW stay
    float64 here, fp32 there);
  - every layer's output: layer norms, linear layers (so the logits),
    GELU, attention; FlashAttention's probabilities P before P V and dS in
    the backward;
  - every activation gradient: the inputs' gradients of linear layers,
    GELU, attention and layer norm, and dlogits.
Not rounded here (so the emulation is slightly kinder than the device): the
residual sums, and the summation order of the device's matrix products.
Parameter gradients, statistics and the loss stay unrounded (fp32 there).

Run it from the CPU run's initial checkpoint and compare with the CPU run
as cuda-match.sh compares the GPU run:

  cuda-bf16-emulation.py --config examples/gpt-tiny.json --init INIT \\
      --data tokens.bin --steps 3 --microbatches 4 --seed 20261130 \\
      --lr 1e-3 --metrics emu.jsonl --save emu.safetensors
  bitpipe-compare --metrics --rtol 1e-2 emu.jsonl CPU/metrics.jsonl
  cuda-match-params.py --precision bf16 --init INIT \\
      --reference CPU/params/rank0.safetensors --candidate emu.safetensors

Measured (gpt-tiny and bert-tiny, 3 steps, 4 micro-batches): loss within
1.7e-4 relative, gradient norm within 1.2e-3, parameters within 0.12 of the
update's norm (0.245 of cuda-match-params.py's 0.5 allowance).
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "reference"))
import model  # noqa: E402
import train_reference  # noqa: E402


def bf16(x):
    """x rounded to bfloat16 (nearest even), as float64."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def attention(qkv, heads, causal, drop=None):
    """model.attention, with P rounded before P V (as FlashAttention's
    bf16 tensor-core product) and the output rounded. Models with dropout
    are not emulated."""
    if drop is not None:
        raise NotImplementedError("the bf16 emulation has no dropout")
    h = qkv.shape[-1] // 3
    q, k, v = (model.split_heads(qkv[..., i * h:(i + 1) * h], heads)
               for i in range(3))
    scale = 1.0 / math.sqrt(h // heads)
    s = (q @ k.transpose(0, 1, 3, 2)) * scale
    if causal:
        t = s.shape[-1]
        s = np.where(np.tril(np.ones((t, t), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return bf16(model.merge_heads(bf16(p) @ v)), (q, k, v, p, scale)


def attention_grad(dout, cache, heads):
    """model.attention_grad with P and dS rounded, and dqkv rounded."""
    q, k, v, p, scale = cache
    do = model.split_heads(dout, heads)
    dv = bf16(p).transpose(0, 1, 3, 2) @ do
    dp = do @ v.transpose(0, 1, 3, 2)
    ds = bf16(p * (dp - (dp * p).sum(-1, keepdims=True)))
    dq = (ds @ k) * scale
    dk = (ds.transpose(0, 1, 3, 2) @ q) * scale
    return bf16(np.concatenate([model.merge_heads(dq), model.merge_heads(dk),
                                model.merge_heads(dv)], axis=-1))


def install():
    """Replaces model's functions by rounding versions (the Transformer
    looks them up by name at each call)."""
    layer_norm, linear, linear_grad = (model.layer_norm, model.linear,
                                       model.linear_grad)
    gelu, gelu_grad = model.gelu, model.gelu_grad
    layer_norm_grad, cross_entropy = model.layer_norm_grad, model.cross_entropy

    def rounded_layer_norm(x, gamma, beta, eps):
        y, cache = layer_norm(x, gamma, beta, eps)
        return bf16(y), cache

    def rounded_linear_grad(dy, x, w):
        dx, dw, db = linear_grad(dy, x, w)
        return bf16(dx), dw, db

    def rounded_layer_norm_grad(dy, cache):
        dx, dgamma, dbeta = layer_norm_grad(dy, cache)
        return bf16(dx), dgamma, dbeta

    def rounded_cross_entropy(logits, labels):
        loss, dlogits = cross_entropy(logits, labels)
        return loss, bf16(dlogits)

    model.layer_norm = rounded_layer_norm
    model.linear = lambda x, w, b: bf16(linear(x, w, b))
    model.linear_grad = rounded_linear_grad
    model.gelu = lambda x: bf16(gelu(x))
    model.gelu_grad = lambda dy, x: bf16(gelu_grad(dy, x))
    model.attention = attention
    model.attention_grad = attention_grad
    model.layer_norm_grad = rounded_layer_norm_grad
    model.cross_entropy = rounded_cross_entropy
    # The kernels read bf16 copies of the weights; the gradients they
    # return are with respect to those copies, applied to the masters.
    loss_and_grads = model.Transformer.loss_and_grads
    model.Transformer.loss_and_grads = (
        lambda self, params, inputs, labels, *dropout: loss_and_grads(
            self, {k: bf16(v) for k, v in params.items()}, inputs, labels,
            *dropout))


if __name__ == "__main__":
    install()
    sys.exit(train_reference.main(sys.argv[1:]))
