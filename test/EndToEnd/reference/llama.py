"""LLaMA-style decoders in float64, forward and backward, written from
docs/llama.md (Hugging Face's LlamaForCausalLM): RMSNorm, a fused bias-free
[q | k | v] projection with kv_heads key/value heads, rotary embedding of q
and k (rotate_half), causal grouped-query attention, SwiGLU MLP, an untied
(or tied) output projection. Nothing here is derived from the compiler's IR
or the runtime's kernels. Shares model.py's helpers for what GPT has too
(linear layers, the softmax attention core, the cross-entropy).
"""
import math

import numpy as np

from dropout import NoDropout, apply, attention_site
from model import cross_entropy, linear, merge_heads


def rms_norm(x, gamma, eps):
    rstd = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    xhat = x * rstd
    return xhat * gamma, (xhat, rstd, gamma)


def rms_norm_grad(dy, cache):
    xhat, rstd, gamma = cache
    dgamma = (dy * xhat).sum(tuple(range(dy.ndim - 1)))
    dxhat = dy * gamma
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dgamma


def rotation(T, d, theta):
    """cos and sin [T, d/2] of the angles t * theta^(-2i/d)."""
    inv_freq = theta ** (-2.0 * np.arange(d // 2) / d)
    angle = np.arange(T)[:, None] * inv_freq[None, :]
    return np.cos(angle), np.sin(angle)


def rotate(x, cos, sin):
    """x [B, heads, T, d]: features i and i + d/2 rotate by the angle of i
    (Hugging Face's rotate_half); sin = -sin is the inverse rotation."""
    half = x.shape[-1] // 2
    lo, hi = x[..., :half], x[..., half:]
    return np.concatenate([lo * cos - hi * sin, hi * cos + lo * sin], -1)


def heads_of(x, n, d):
    B, T, _ = x.shape
    return x.reshape(B, T, n, d).transpose(0, 2, 1, 3)


def gqa_attention(qkv, heads, kv_heads, theta, drop=None):
    """qkv [B, T, (heads + 2 kv_heads) d]; rotary on q and k, then causal
    attention where query head h reads key/value head h // (heads //
    kv_heads); drop: a dropout factor [B, heads, T, T] for the
    probabilities, or None."""
    B, T, width = qkv.shape
    d = width // (heads + 2 * kv_heads)
    q = heads_of(qkv[..., :heads * d], heads, d)
    k = heads_of(qkv[..., heads * d:(heads + kv_heads) * d], kv_heads, d)
    v = heads_of(qkv[..., (heads + kv_heads) * d:], kv_heads, d)
    cos, sin = rotation(T, d, theta)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    group = heads // kv_heads
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / math.sqrt(d)
    s = (q @ kr.transpose(0, 1, 3, 2)) * scale
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    pd = apply(drop, p)
    return merge_heads(pd @ vr), (q, kr, vr, p, pd, drop, scale, cos, sin,
                                  group)


def gqa_attention_grad(dout, cache, heads):
    q, kr, vr, p, pd, drop, scale, cos, sin, group = cache
    B, T, H = dout.shape
    do = heads_of(dout, heads, H // heads)
    dvr = pd.transpose(0, 1, 3, 2) @ do
    dp = apply(drop, do @ vr.transpose(0, 1, 3, 2))
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = (ds @ kr) * scale
    dkr = (ds.transpose(0, 1, 3, 2) @ q) * scale

    def fold(x):  # the repeated heads' gradients summed per key/value head
        return x.reshape(B, -1, group, T, x.shape[-1]).sum(2)

    dq, dk = rotate(dq, cos, -sin), rotate(fold(dkr), cos, -sin)
    return np.concatenate([merge_heads(dq), merge_heads(dk),
                           merge_heads(fold(dvr))], axis=-1)


def silu(x):
    return x / (1.0 + np.exp(-x))


def swiglu_grad(dy, gate, up):
    s = 1.0 / (1.0 + np.exp(-gate))
    return dy * up * s * (1.0 + gate * (1.0 - s)), dy * gate * s


class Llama:
    """family "llama": parameters named as bitpipe names them (docs/llama.md);
    linear weights [out, in], no biases."""

    def __init__(self, config):
        self.layers = config["layers"]
        self.heads = config["heads"]
        self.kv_heads = config.get("kv_heads", config["heads"])
        self.theta = config.get("rope_theta", 10000.0)
        self.eps = config.get("layer_norm_epsilon", 1e-5)
        self.tied = config.get("tie_embeddings", False)
        # A LLaMA drops only its attention probabilities (docs/models.md).
        self.p_attn = config.get("attention_dropout", 0.0)

    def loss_and_grads(self, params, inputs, labels, dropout=NoDropout()):
        P, eps = params, self.eps
        grads = {name: np.zeros_like(value) for name, value in P.items()}
        B, T = inputs.shape
        x = P["embed.tokens"][inputs]
        caches = []
        for i in range(self.layers):
            n = f"layers.{i}."
            h1, ln1 = rms_norm(x, P[n + "ln1.weight"], eps)
            qkv = h1 @ P[n + "attn.qkv.weight"].T
            drop = (dropout.mask(attention_site(i), (B, self.heads, T, T),
                                 self.p_attn) if self.p_attn > 0 else None)
            a, att = gqa_attention(qkv, self.heads, self.kv_heads, self.theta,
                                   drop)
            x1 = x + a @ P[n + "attn.proj.weight"].T
            h2, ln2 = rms_norm(x1, P[n + "ln2.weight"], eps)
            gate = h2 @ P[n + "mlp.gate.weight"].T
            up = h2 @ P[n + "mlp.up.weight"].T
            m = silu(gate) * up
            x = x1 + m @ P[n + "mlp.down.weight"].T
            caches.append((h1, ln1, att, a, h2, ln2, gate, up, m))
        y, lnf = rms_norm(x, P["final_ln.weight"], eps)
        head = "embed.tokens" if self.tied else "head.weight"
        logits = linear(y, P[head], None)
        loss, dlogits = cross_entropy(logits, labels)

        def back(name, dy, x):  # y = x W^T: adds dW, returns dx
            grads[name] += (dy.reshape(-1, dy.shape[-1]).T
                            @ x.reshape(-1, x.shape[-1]))
            return dy @ P[name]

        def norm_back(name, dy, cache):
            dx, dgamma = rms_norm_grad(dy, cache)
            grads[name] += dgamma
            return dx

        dx = norm_back("final_ln.weight", back(head, dlogits, y), lnf)
        for i in reversed(range(self.layers)):
            n = f"layers.{i}."
            h1, ln1, att, a, h2, ln2, gate, up, m = caches[i]
            dgate, dup = swiglu_grad(back(n + "mlp.down.weight", dx, m),
                                     gate, up)
            dh2 = (back(n + "mlp.gate.weight", dgate, h2)
                   + back(n + "mlp.up.weight", dup, h2))
            dx1 = norm_back(n + "ln2.weight", dh2, ln2) + dx
            da = back(n + "attn.proj.weight", dx1, a)
            dqkv = gqa_attention_grad(da, att, self.heads)
            dh1 = back(n + "attn.qkv.weight", dqkv, h1)
            dx = norm_back(n + "ln1.weight", dh1, ln1) + dx1
        np.add.at(grads["embed.tokens"], inputs, dx)
        return loss, grads
