"""plain_model.py: GPT-2 and LLaMA in plain PyTorch, for a peer without
Hugging Face transformers.

Debian 12's python3-torch (1.13) is the PyTorch any Debian machine can
install from its own archive, but Debian has no transformers, and
transformers 5 needs torch >= 2.6 anyway. These modules compute what
GPT2LMHeadModel and LlamaForCausalLM compute in eager attention, fp32, no
dropout (test/EndToEnd/reference/hf_models.py states the graphs; this file
follows it op for op), from a --save-hf folder's config.json and
model.safetensors, read without the safetensors package
(test/EndToEnd/reference/safetensors_io.py). Each matrix product is one
torch call, as transformers makes it (GPT-2's Conv1D: addmm; LLaMA:
F.linear), so the peer is PyTorch eager as a user would write the model,
without transformers' Python layers around it.

Runs on torch 1.13 and on the pinned torch of requirements.txt: only
operations that both have.
"""

import json
import math
import os
import sys

import peer_model  # noqa: F401  (puts test/EndToEnd/reference on the path)
import safetensors_io


def _torch():
    import torch

    return torch


class _Config:
    """The fields of a --save-hf config.json that the models read, with
    transformers' names for the ones torch_step.py asks about."""

    def __init__(self, raw, path):
        def need(key):
            if key not in raw:
                sys.exit("plain_model.py: %s: no field '%s'" % (path, key))
            return raw[key]

        self.model_type = raw.get("model_type")
        self.vocab_size = int(need("vocab_size"))
        if self.model_type == "gpt2":
            self.hidden = int(need("n_embd"))
            self.heads = int(need("n_head"))
            self.kv_heads = self.heads
            self.layers = int(need("n_layer"))
            self.eps = float(raw.get("layer_norm_epsilon", 1e-5))
            self.max_position_embeddings = int(need("n_positions"))
        elif self.model_type == "llama":
            self.hidden = int(need("hidden_size"))
            self.heads = int(need("num_attention_heads"))
            self.kv_heads = int(raw.get("num_key_value_heads") or self.heads)
            self.layers = int(need("num_hidden_layers"))
            self.eps = float(raw.get("rms_norm_eps", 1e-6))
            self.rope_theta = float(raw.get("rope_theta", 10000.0))
            self.max_position_embeddings = int(need("max_position_embeddings"))
        else:
            sys.exit("plain_model.py: %s: model_type %r: only gpt2 and llama" % (path, self.model_type))


def _causal_attention(torch, q, k, v):
    """softmax(q k^T / sqrt(d) + causal mask) v over [B, heads, T, d], as
    transformers' eager attention: the mask is the dtype's lowest value,
    the softmax in the activations' dtype."""
    T, d = q.shape[-2], q.shape[-1]
    s = torch.matmul(q, k.transpose(-1, -2)) * (d ** -0.5)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
    return torch.matmul(torch.softmax(s, dim=-1), v)


def _module_classes():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class PlainGpt2(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
            H, V, P = c.hidden, c.vocab_size, c.max_position_embeddings
            self.wte = nn.Parameter(torch.empty(V, H))
            self.wpe = nn.Parameter(torch.empty(P, H))
            self.blocks = nn.ModuleList()
            for _ in range(c.layers):
                b = nn.Module()
                b.ln_1 = nn.LayerNorm(H, eps=c.eps)
                b.c_attn_w = nn.Parameter(torch.empty(H, 3 * H))  # Conv1D: [in, out]
                b.c_attn_b = nn.Parameter(torch.empty(3 * H))
                b.c_proj_w = nn.Parameter(torch.empty(H, H))
                b.c_proj_b = nn.Parameter(torch.empty(H))
                b.ln_2 = nn.LayerNorm(H, eps=c.eps)
                b.c_fc_w = nn.Parameter(torch.empty(H, 4 * H))
                b.c_fc_b = nn.Parameter(torch.empty(4 * H))
                b.mlp_proj_w = nn.Parameter(torch.empty(4 * H, H))
                b.mlp_proj_b = nn.Parameter(torch.empty(H))
                self.blocks.append(b)
            self.ln_f = nn.LayerNorm(H, eps=c.eps)

        def names(self):
            """{checkpoint name: parameter}, GPT2Model's names."""
            out = {"wte.weight": self.wte, "wpe.weight": self.wpe,
                   "ln_f.weight": self.ln_f.weight, "ln_f.bias": self.ln_f.bias}
            for i, b in enumerate(self.blocks):
                p = "h.%d." % i
                out.update({p + "ln_1.weight": b.ln_1.weight, p + "ln_1.bias": b.ln_1.bias,
                            p + "attn.c_attn.weight": b.c_attn_w, p + "attn.c_attn.bias": b.c_attn_b,
                            p + "attn.c_proj.weight": b.c_proj_w, p + "attn.c_proj.bias": b.c_proj_b,
                            p + "ln_2.weight": b.ln_2.weight, p + "ln_2.bias": b.ln_2.bias,
                            p + "mlp.c_fc.weight": b.c_fc_w, p + "mlp.c_fc.bias": b.c_fc_b,
                            p + "mlp.c_proj.weight": b.mlp_proj_w, p + "mlp.c_proj.bias": b.mlp_proj_b})
            return out

        def forward(self, ids):
            B, T = ids.shape
            H, nh = self.c.hidden, self.c.heads
            d = H // nh

            def conv1d(x, w, bias):
                return torch.addmm(bias, x.reshape(-1, x.shape[-1]), w).reshape(B, T, -1)

            def heads_of(x):
                return x.reshape(B, T, nh, d).transpose(1, 2)

            h = F.embedding(ids, self.wte) + self.wpe[:T]
            for b in self.blocks:
                q, k, v = conv1d(b.ln_1(h), b.c_attn_w, b.c_attn_b).split(H, dim=-1)
                o = _causal_attention(torch, heads_of(q), heads_of(k), heads_of(v))
                h = h + conv1d(o.transpose(1, 2).reshape(B, T, H), b.c_proj_w, b.c_proj_b)
                m = conv1d(b.ln_2(h), b.c_fc_w, b.c_fc_b)
                m = 0.5 * m * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (m + 0.044715 * torch.pow(m, 3.0))))
                h = h + conv1d(m, b.mlp_proj_w, b.mlp_proj_b)
            return F.linear(self.ln_f(h), self.wte)  # the tied head

    class RmsNorm(nn.Module):
        def __init__(self, n, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(n))
            self.eps = eps

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(var + self.eps))

    class PlainLlama(nn.Module):
        def __init__(self, c, inter, tied):
            super().__init__()
            self.c = c
            H, V = c.hidden, c.vocab_size
            d = H // c.heads
            self.embed = nn.Parameter(torch.empty(V, H))
            self.blocks = nn.ModuleList()
            for _ in range(c.layers):
                b = nn.Module()
                b.input_norm = RmsNorm(H, c.eps)
                b.q = nn.Parameter(torch.empty(c.heads * d, H))
                b.k = nn.Parameter(torch.empty(c.kv_heads * d, H))
                b.v = nn.Parameter(torch.empty(c.kv_heads * d, H))
                b.o = nn.Parameter(torch.empty(H, c.heads * d))
                b.post_norm = RmsNorm(H, c.eps)
                b.gate = nn.Parameter(torch.empty(inter, H))
                b.up = nn.Parameter(torch.empty(inter, H))
                b.down = nn.Parameter(torch.empty(H, inter))
                self.blocks.append(b)
            self.norm = RmsNorm(H, c.eps)
            self.head = None if tied else nn.Parameter(torch.empty(V, H))

        def names(self):
            """{checkpoint name: parameter}, LlamaForCausalLM's names."""
            out = {"model.embed_tokens.weight": self.embed, "model.norm.weight": self.norm.weight}
            if self.head is not None:
                out["lm_head.weight"] = self.head
            for i, b in enumerate(self.blocks):
                p = "model.layers.%d." % i
                out.update({p + "input_layernorm.weight": b.input_norm.weight,
                            p + "self_attn.q_proj.weight": b.q, p + "self_attn.k_proj.weight": b.k,
                            p + "self_attn.v_proj.weight": b.v, p + "self_attn.o_proj.weight": b.o,
                            p + "post_attention_layernorm.weight": b.post_norm.weight,
                            p + "mlp.gate_proj.weight": b.gate, p + "mlp.up_proj.weight": b.up,
                            p + "mlp.down_proj.weight": b.down})
            return out

        def forward(self, ids):
            c = self.c
            B, T = ids.shape
            H, nh, nkv = c.hidden, c.heads, c.kv_heads
            d = H // nh
            dtype = self.embed.dtype
            inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
            freqs = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None]
            emb = torch.cat([freqs, freqs], dim=-1)
            cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)

            def rotate_half(x):
                return torch.cat([-x[..., d // 2:], x[..., :d // 2]], dim=-1)

            def heads_of(x, n):
                return x.reshape(B, T, n, d).transpose(1, 2)

            h = F.embedding(ids, self.embed)
            for b in self.blocks:
                x = b.input_norm(h)
                q = heads_of(F.linear(x, b.q), nh)
                k = heads_of(F.linear(x, b.k), nkv)
                v = heads_of(F.linear(x, b.v), nkv)
                q = q * cos + rotate_half(q) * sin
                k = k * cos + rotate_half(k) * sin
                if nkv != nh:  # transformers' repeat_kv
                    k = k.repeat_interleave(nh // nkv, dim=1)
                    v = v.repeat_interleave(nh // nkv, dim=1)
                o = _causal_attention(torch, q, k, v)
                h = h + F.linear(o.transpose(1, 2).reshape(B, T, H), b.o)
                x = b.post_norm(h)
                h = h + F.linear(F.silu(F.linear(x, b.gate)) * F.linear(x, b.up), b.down)
            return F.linear(self.norm(h), self.embed if self.head is None else self.head)

    return PlainGpt2, PlainLlama


def load(hf, dtype, prog):
    """(model, config) of a --save-hf folder; every parameter is set from
    the checkpoint, and a checkpoint tensor the model lacks (or the other
    way round) is an error naming it."""
    torch = _torch()
    cpath = os.path.join(hf, "config.json")
    with open(cpath) as f:
        raw = json.load(f)
    c = _Config(raw, cpath)
    wpath = os.path.join(hf, "model.safetensors")
    tensors, _ = safetensors_io.read(wpath)
    PlainGpt2, PlainLlama = _module_classes()
    if c.model_type == "gpt2":
        # GPT2LMHeadModel's files carry the causal-mask buffers and may
        # prefix "transformer."; the tied head is not a tensor of its own.
        tensors = {k[len("transformer."):] if k.startswith("transformer.") else k: v
                   for k, v in tensors.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
        tensors.pop("lm_head.weight", None)
        model = PlainGpt2(c)
    else:
        up = tensors.get("model.layers.0.mlp.up_proj.weight")
        if up is None:
            sys.exit("%s: %s: no tensor 'model.layers.0.mlp.up_proj.weight'" % (prog, wpath))
        tied = "lm_head.weight" not in tensors or bool(raw.get("tie_word_embeddings", False))
        if tied:
            tensors.pop("lm_head.weight", None)
        tensors = {k: v for k, v in tensors.items() if not k.endswith("rotary_emb.inv_freq")}
        model = PlainLlama(c, int(up.shape[0]), tied)
    names = model.names()
    missing = sorted(set(names) - set(tensors))
    extra = sorted(set(tensors) - set(names))
    if missing or extra:
        sys.exit("%s: %s: tensors missing %s, not expected %s" % (prog, wpath, missing[:4], extra[:4]))
    with torch.no_grad():
        for name, p in names.items():
            t = tensors[name]
            if tuple(t.shape) != tuple(p.shape):
                sys.exit("%s: %s: tensor '%s' is %s, expected %s" % (prog, wpath, name, list(t.shape), list(p.shape)))
            p.copy_(torch.from_numpy(t))
    return model.to(dtype), c
