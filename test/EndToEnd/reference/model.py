"""GPT- and BERT-style transformers in float64, forward and backward, written
from the models' definitions (docs/models.md, docs/training-semantics.md;
LLaMA-style decoders are in llama.py, make_model picks by family):
nothing here is derived from the compiler's IR or the runtime's kernels, so
a fault in either shows up as a difference.

Parameters are a dict of numpy arrays named as the project names them
(embed.tokens, layers.<i>.attn.qkv.weight, ...); linear weights are
[out, in] and y = x W^T + b.
"""
import math

import numpy as np

from batches import IGNORE_INDEX
from dropout import (NoDropout, apply, attention_output_site, attention_site,
                     embedding_site, mlp_output_site)

GELU_C = math.sqrt(2.0 / math.pi)


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)  # biased, as PyTorch
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    return xhat * gamma + beta, (xhat, rstd, gamma)


def layer_norm_grad(dy, cache):
    xhat, rstd, gamma = cache
    axes = tuple(range(dy.ndim - 1))
    dgamma = (dy * xhat).sum(axes)
    dbeta = dy.sum(axes)
    dxhat = dy * gamma
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dgamma, dbeta


def linear(x, w, b):
    y = x @ w.T
    return y + b if b is not None else y


def linear_grad(dy, x, w):
    """(dx, dw, db) of y = x W^T + b."""
    dx = dy @ w
    dw = dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])
    db = dy.reshape(-1, dy.shape[-1]).sum(0)
    return dx, dw, db


def gelu(x):
    """GELU, tanh form (GPT-2)."""
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def gelu_grad(dy, x):
    t = np.tanh(GELU_C * (x + 0.044715 * x ** 3))
    du = GELU_C * (1.0 + 3 * 0.044715 * x ** 2)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


def gelu_erf(x):
    """GELU, exact form (BERT): x Phi(x)."""
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_erf_grad(dy, x):
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return dy * (0.5 * (1.0 + erf(x / math.sqrt(2.0))) + x * pdf)


# math.erf, element-wise (numpy has no erf; scipy is not a dependency).
erf = np.vectorize(math.erf, otypes=[np.float64])

# The config's "gelu" (docs/models.md): the function and its gradient.
GELUS = {"tanh": (gelu, gelu_grad), "erf": (gelu_erf, gelu_erf_grad)}


def split_heads(x, heads):
    B, T, H = x.shape
    return x.reshape(B, T, heads, H // heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    B, nh, T, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, nh * d)


def attention(qkv, heads, causal, drop=None):
    """qkv [B, T, 3H] = [q | k | v], each split into heads of H/heads
    columns; scores scaled by 1/sqrt(d); causal: query t sees keys <= t.
    drop: a dropout factor [B, heads, T, T] for the probabilities, or
    None."""
    H = qkv.shape[-1] // 3
    q, k, v = (split_heads(qkv[..., i * H:(i + 1) * H], heads)
               for i in range(3))
    scale = 1.0 / math.sqrt(H // heads)
    s = (q @ k.transpose(0, 1, 3, 2)) * scale
    if causal:
        T = s.shape[-1]
        s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    pd = apply(drop, p)
    return merge_heads(pd @ v), (q, k, v, p, pd, drop, scale)


def attention_grad(dout, cache, heads):
    q, k, v, p, pd, drop, scale = cache
    do = split_heads(dout, heads)
    dv = pd.transpose(0, 1, 3, 2) @ do
    dp = apply(drop, do @ v.transpose(0, 1, 3, 2))
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = (ds @ k) * scale
    dk = (ds.transpose(0, 1, 3, 2) @ q) * scale
    return np.concatenate([merge_heads(dq), merge_heads(dk),
                           merge_heads(dv)], axis=-1)


def cross_entropy(logits, labels):
    """Mean over the positions whose label is not the ignore index; and the
    gradient of that mean with respect to the logits."""
    valid = labels != IGNORE_INDEX
    count = int(valid.sum())
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    safe = np.where(valid, labels, 0)
    picked = np.take_along_axis(logp, safe[..., None], -1)[..., 0]
    loss = -(picked * valid).sum() / max(count, 1)
    dlogits = np.exp(logp)
    np.put_along_axis(dlogits, safe[..., None],
                      np.take_along_axis(dlogits, safe[..., None], -1) - 1.0,
                      -1)
    dlogits *= valid[..., None] / max(count, 1)
    return loss, dlogits


class Transformer:
    """family "gpt": causal attention, logits = final_ln(x) wte^T.
    family "bert": bidirectional attention, masked-LM head
    (dense, GELU, layer norm, logits = . wte^T + head.bias).
    gelu "tanh" (the default) or "erf".
    layer_norm_position "pre" (the default): x + attn(ln1(x)),
    x + mlp(ln2(x)), final_ln; "post" (BERT only, the original BERT):
    embed.ln after the embeddings, ln1(x + attn(x)), ln2(x + mlp(x)), no
    final norm.
    Dropout (docs/models.md): "embedding_dropout" after the embeddings
    (after embed.ln when post), "attention_dropout" on the attention
    probabilities, "residual_dropout" on each sublayer's output before its
    add."""

    def __init__(self, config):
        self.family = config["family"]
        self.layers = config["layers"]
        self.heads = config["heads"]
        self.eps = config.get("layer_norm_epsilon", 1e-5)
        self.post = config.get("layer_norm_position", "pre") == "post"
        self.gelu, self.gelu_grad = GELUS[config.get("gelu", "tanh")]
        self.p_embed = config.get("embedding_dropout", 0.0)
        self.p_attn = config.get("attention_dropout", 0.0)
        self.p_resid = config.get("residual_dropout", 0.0)

    def loss_and_grads(self, params, inputs, labels, dropout=NoDropout()):
        """The micro-batch's loss and d loss / d param for every param;
        `dropout` draws the micro-batch's masks (dropout.Dropout)."""
        P, L, eps = params, self.layers, self.eps
        grads = {name: np.zeros_like(value) for name, value in P.items()}
        B, T = inputs.shape
        H = P["embed.tokens"].shape[1]

        def mask(p, site, shape):
            return dropout.mask(site, shape, p) if p > 0 else None

        x = P["embed.tokens"][inputs] + P["embed.positions"][:T][None]
        norm = lambda v, prefix: layer_norm(v, P[prefix + ".weight"],
                                            P[prefix + ".bias"], eps)
        if self.post:
            x, lne = norm(x, "embed.ln")
        drop_embed = mask(self.p_embed, embedding_site(), (B, T, H))
        x = apply(drop_embed, x)
        caches = []
        for i in range(L):
            n = f"layers.{i}."
            if self.post:
                # h1, h2: the sublayers' inputs; ln1, ln2 after the adds.
                h1, ln1 = x, None
            else:
                h1, ln1 = norm(x, n + "ln1")
            qkv = linear(h1, P[n + "attn.qkv.weight"], P[n + "attn.qkv.bias"])
            a, att = attention(qkv, self.heads, self.family == "gpt",
                               mask(self.p_attn, attention_site(i),
                                    (B, self.heads, T, T)))
            drop1 = mask(self.p_resid, attention_output_site(i), (B, T, H))
            drop2 = mask(self.p_resid, mlp_output_site(i), (B, T, H))
            x1 = x + apply(drop1, linear(a, P[n + "attn.proj.weight"],
                                         P[n + "attn.proj.bias"]))
            if self.post:
                x1, ln1 = norm(x1, n + "ln1")
                h2, ln2 = x1, None
            else:
                h2, ln2 = norm(x1, n + "ln2")
            f = linear(h2, P[n + "mlp.fc.weight"], P[n + "mlp.fc.bias"])
            g = self.gelu(f)
            x2 = x1 + apply(drop2, linear(g, P[n + "mlp.proj.weight"],
                                          P[n + "mlp.proj.bias"]))
            if self.post:
                x2, ln2 = norm(x2, n + "ln2")
            caches.append((h1, ln1, att, a, h2, ln2, f, g, drop1, drop2))
            x = x2
        if self.post:
            y = x
        else:
            y, lnf = norm(x, "final_ln")
        wte = P["embed.tokens"]
        if self.family == "bert":
            d = linear(y, P["head.dense.weight"], P["head.dense.bias"])
            e = self.gelu(d)
            t, lnh = layer_norm(e, P["head.ln.weight"], P["head.ln.bias"],
                                eps)
            logits = linear(t, wte, P["head.bias"])
        else:
            t = y
            logits = linear(t, wte, None)
        loss, dlogits = cross_entropy(logits, labels)

        # Backward, in reverse. Each helper adds the parameter gradients of
        # one layer into grads and returns the gradient of its input.
        def linear_back(prefix, dy, x):
            dx, dw, db = linear_grad(dy, x, P[prefix + ".weight"])
            grads[prefix + ".weight"] += dw
            grads[prefix + ".bias"] += db
            return dx

        def norm_back(prefix, dy, cache):
            dx, dgamma, dbeta = layer_norm_grad(dy, cache)
            grads[prefix + ".weight"] += dgamma
            grads[prefix + ".bias"] += dbeta
            return dx

        dt, dwte_out, dhead_bias = linear_grad(dlogits, t, wte)
        grads["embed.tokens"] += dwte_out
        if self.family == "bert":
            grads["head.bias"] += dhead_bias
            de = norm_back("head.ln", dt, lnh)
            dy = linear_back("head.dense", self.gelu_grad(de, d), y)
        else:
            dy = dt
        dx = dy if self.post else norm_back("final_ln", dy, lnf)
        for i in reversed(range(L)):
            n = f"layers.{i}."
            h1, ln1, att, a, h2, ln2, f, g, drop1, drop2 = caches[i]
            if self.post:
                # d(x2) through ln2; both x1 and the MLP feed the add; then
                # d(x1) through ln1, both x and the attention feed that add.
                dsum = norm_back(n + "ln2", dx, ln2)
                dg = linear_back(n + "mlp.proj", apply(drop2, dsum), g)
                dx1 = linear_back(n + "mlp.fc", self.gelu_grad(dg, f),
                                  h2) + dsum
                dsum = norm_back(n + "ln1", dx1, ln1)
                da = linear_back(n + "attn.proj", apply(drop1, dsum), a)
                dx = linear_back(n + "attn.qkv",
                                 attention_grad(da, att, self.heads),
                                 h1) + dsum
                continue
            dg = linear_back(n + "mlp.proj", apply(drop2, dx), g)
            dh2 = linear_back(n + "mlp.fc", self.gelu_grad(dg, f), h2)
            dx1 = norm_back(n + "ln2", dh2, ln2) + dx
            da = linear_back(n + "attn.proj", apply(drop1, dx1), a)
            dh1 = linear_back(n + "attn.qkv", attention_grad(da, att,
                                                             self.heads), h1)
            dx = norm_back(n + "ln1", dh1, ln1) + dx1
        dx = apply(drop_embed, dx)
        if self.post:
            dx = norm_back("embed.ln", dx, lne)
        np.add.at(grads["embed.tokens"], inputs, dx)
        grads["embed.positions"][:T] += dx.sum(0)
        return loss, grads


def make_model(config):
    """The reference model of a bitpipe config's family."""
    if config["family"] == "llama":
        from llama import Llama  # llama.py imports this module's helpers
        return Llama(config)
    return Transformer(config)
