#!/usr/bin/env python3
"""hf_models.py: Hugging Face's GPT-2 (GPT2LMHeadModel), BERT
(BertForMaskedLM) and LLaMA (LlamaForCausalLM) graphs in eval mode, in
float64, over checkpoints in Hugging Face's own names and layouts, written
from transformers' definitions and sharing nothing with bitpipe's mapping
(runtime/lib/train/HuggingFace.cpp), model.py or llama.py.

GPT-2:
  - Conv1D layers store their weight [in, out] and compute x W + b;
  - c_attn's output is split into q, k, v of n_embd columns each, each
    into n_head heads of consecutive columns;
  - GELU is gelu_new (tanh form); layer norms use epsilon 1e-5;
  - the logits are ln_f(h) wte^T (the head is tied).
BERT (post-LN):
  - nn.Linear weights [out, in], x W^T + b;
  - embeddings: word + position + token type 0, then
    embeddings.LayerNorm (epsilon from the config);
  - each layer: separate query, key, value projections, each split into
    heads of consecutive columns, bidirectional attention;
    attention.output.LayerNorm(dense(context) + x); then
    output.LayerNorm(output.dense(act(intermediate.dense(h))) + h);
  - the MLM head: transform.dense, act, transform.LayerNorm, then the
    decoder tied to the word embeddings plus cls.predictions.bias;
  - act is hidden_act "gelu" (erf form, BertConfig's default) when the
    bitpipe config says "gelu": "erf", else "gelu_new" (tanh form);
  - the loss: mean cross-entropy over the labelled (masked) positions.
LLaMA:
  - nn.Linear weights [out, in], x W^T, no biases;
  - RMSNorm x / sqrt(mean(x^2) + eps) * weight;
  - rotary embedding: inv_freq = theta^(-2i/d), cos and sin of
    cat(freqs, freqs), x cos + rotate_half(x) sin with
    rotate_half(x) = cat(-x[d/2:], x[:d/2]);
  - repeat_kv: query head h reads key/value head h // (heads / kv_heads);
  - MLP down(silu(gate(x)) * up(x)); an untied lm_head.

  make  --config CONFIG --out FILE [--seed S]
        random weights of a bitpipe config (family gpt, bert or llama).
        GPT-2: named as GPT2Model writes them (the hub's gpt2 file: no
        "transformer." prefix, with the causal-mask buffers
        "h.<i>.attn.bias"), F32. BERT: named as BertForMaskedLM writes
        them, with the pooler, the next-sentence head, the tied decoder
        copy and the position_ids buffer, F32. LLaMA: named as
        LlamaForCausalLM writes them, with old checkpoints'
        "rotary_emb.inv_freq" buffers, BF16.
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


def layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi)
                                    * (x + 0.044715 * x ** 3)))


def gelu(x):
    """transformers' "gelu": the exact x Phi(x)."""
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


# A bitpipe config's "gelu" -> transformers' activation of that form.
HIDDEN_ACT = {"tanh": gelu_new, "erf": gelu}


def softmax_causal(s):
    T = s.shape[-1]
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return s / s.sum(-1, keepdims=True)


def mean_cross_entropy(logits, labels):
    """Over the positions whose label is not -100 (torch's ignore_index)."""
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    valid = labels != -100
    picked = np.take_along_axis(logp, np.where(valid, labels, 0)[..., None],
                                -1)[..., 0]
    return -picked[valid].mean()


def count_layers(p, prefix):
    return len({k[len(prefix):].split(".")[0] for k in p
                if k.startswith(prefix)})


def gpt2_loss(p, config, ids, labels):
    """The mean next-token cross-entropy of GPT2LMHeadModel."""
    n_head = config["heads"]
    B, T = ids.shape
    conv1d = lambda x, name: x @ p[name + ".weight"] + p[name + ".bias"]
    h = p["wte.weight"][ids] + p["wpe.weight"][np.arange(T)][None]
    for i in range(count_layers(p, "h.")):
        pre = f"h.{i}."
        a = layer_norm(h, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"])
        qkv = conv1d(a, pre + "attn.c_attn")
        E = qkv.shape[-1] // 3
        d = E // n_head
        q, k, v = (qkv[..., j * E:(j + 1) * E]
                   .reshape(B, T, n_head, d).transpose(0, 2, 1, 3)
                   for j in range(3))
        s = softmax_causal(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d))
        o = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, E)
        h = h + conv1d(o, pre + "attn.c_proj")
        m = layer_norm(h, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
        h = h + conv1d(gelu_new(conv1d(m, pre + "mlp.c_fc")),
                       pre + "mlp.c_proj")
    h = layer_norm(h, p["ln_f.weight"], p["ln_f.bias"])
    return mean_cross_entropy(h @ p["wte.weight"].T, labels)


def bert_loss(p, config, ids, labels):
    """The masked-LM loss of BertForMaskedLM."""
    heads = config["heads"]
    eps = config.get("layer_norm_epsilon", 1e-5)
    B, T = ids.shape
    linear = lambda x, name: x @ p[name + ".weight"].T + p[name + ".bias"]
    norm = lambda x, name: layer_norm(x, p[name + ".weight"],
                                      p[name + ".bias"], eps)
    act = HIDDEN_ACT[config.get("gelu", "tanh")]
    e = "bert.embeddings."
    h = (p[e + "word_embeddings.weight"][ids]
         + p[e + "position_embeddings.weight"][np.arange(T)][None]
         + p[e + "token_type_embeddings.weight"][0])
    h = norm(h, e + "LayerNorm")
    for i in range(count_layers(p, "bert.encoder.layer.")):
        pre = f"bert.encoder.layer.{i}."
        H = h.shape[-1]
        d = H // heads
        q, k, v = (linear(h, pre + "attention.self." + n)
                   .reshape(B, T, heads, d).transpose(0, 2, 1, 3)
                   for n in ("query", "key", "value"))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
        h = norm(linear(o, pre + "attention.output.dense") + h,
                 pre + "attention.output.LayerNorm")
        m = act(linear(h, pre + "intermediate.dense"))
        h = norm(linear(m, pre + "output.dense") + h, pre + "output.LayerNorm")
    t = "cls.predictions.transform."
    h = norm(act(linear(h, t + "dense")), t + "LayerNorm")
    logits = (h @ p["cls.predictions.decoder.weight"].T
              + p["cls.predictions.bias"])
    return mean_cross_entropy(logits, labels)


def llama_loss(p, config, ids, labels):
    """The mean next-token cross-entropy of LlamaForCausalLM."""
    heads = config["heads"]
    kv_heads = config.get("kv_heads", heads)
    eps = config.get("layer_norm_epsilon", 1e-5)
    theta = config.get("rope_theta", 10000.0)
    B, T = ids.shape
    H = p["model.embed_tokens.weight"].shape[1]
    d = H // heads
    linear = lambda x, name: x @ p[name + ".weight"].T
    rms = lambda x, name: (x / np.sqrt((x ** 2).mean(-1, keepdims=True)
                                       + eps) * p[name + ".weight"])
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2) / d)
    freqs = np.arange(T)[:, None] * inv_freq[None]
    emb = np.concatenate([freqs, freqs], -1)
    cos, sin = np.cos(emb), np.sin(emb)

    def rotate_half(x):
        return np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)

    def heads_of(x, n):
        return x.reshape(B, T, n, d).transpose(0, 2, 1, 3)

    h = p["model.embed_tokens.weight"][ids]
    for i in range(count_layers(p, "model.layers.")):
        pre = f"model.layers.{i}."
        x = rms(h, pre + "input_layernorm")
        q = heads_of(linear(x, pre + "self_attn.q_proj"), heads)
        k = heads_of(linear(x, pre + "self_attn.k_proj"), kv_heads)
        v = heads_of(linear(x, pre + "self_attn.v_proj"), kv_heads)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, heads // kv_heads, axis=1)
        v = np.repeat(v, heads // kv_heads, axis=1)
        s = softmax_causal(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d))
        o = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
        h = h + linear(o, pre + "self_attn.o_proj")
        x = rms(h, pre + "post_attention_layernorm")
        gate = linear(x, pre + "mlp.gate_proj")
        silu = gate / (1.0 + np.exp(-gate))
        h = h + linear(silu * linear(x, pre + "mlp.up_proj"),
                       pre + "mlp.down_proj")
    h = rms(h, "model.norm")
    head = p.get("lm_head.weight", p["model.embed_tokens.weight"])
    return mean_cross_entropy(h @ head.T, labels)


def make_gpt2(config, rng):
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
    return t, "F32"


def make_bert(config, rng):
    H, V, P = config["hidden"], config["vocab"], config["max_positions"]
    def normal(*shape, std=0.2):
        return rng.normal(0.0, std, shape)
    e = "bert.embeddings."
    t = {e + "word_embeddings.weight": normal(V, H),
         e + "position_embeddings.weight": normal(P, H),
         # Row 0 is the one segment bitpipe reads; row 1 is never used.
         e + "token_type_embeddings.weight": normal(2, H),
         e + "LayerNorm.weight": 1.0 + normal(H),
         e + "LayerNorm.bias": normal(H),
         e + "position_ids": np.arange(P)[None].astype(np.float64),
         "bert.pooler.dense.weight": normal(H, H),
         "bert.pooler.dense.bias": normal(H),
         "cls.predictions.bias": normal(V),
         "cls.seq_relationship.weight": normal(2, H),
         "cls.seq_relationship.bias": normal(2)}
    for i in range(config["layers"]):
        pre = f"bert.encoder.layer.{i}."
        for name, fan_in, fan_out in (("attention.self.query", H, H),
                                      ("attention.self.key", H, H),
                                      ("attention.self.value", H, H),
                                      ("attention.output.dense", H, H),
                                      ("intermediate.dense", H, 4 * H),
                                      ("output.dense", 4 * H, H)):
            t[pre + name + ".weight"] = normal(fan_out, fan_in,
                                               std=1 / math.sqrt(fan_in))
            t[pre + name + ".bias"] = normal(fan_out)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[pre + norm + ".weight"] = 1.0 + normal(H)
            t[pre + norm + ".bias"] = normal(H)
    tr = "cls.predictions.transform."
    t[tr + "dense.weight"] = normal(H, H, std=1 / math.sqrt(H))
    t[tr + "dense.bias"] = normal(H)
    t[tr + "LayerNorm.weight"] = 1.0 + normal(H)
    t[tr + "LayerNorm.bias"] = normal(H)
    # The decoder is tied: the file holds a copy of the word embeddings.
    t["cls.predictions.decoder.weight"] = t[e + "word_embeddings.weight"]
    t["cls.predictions.decoder.bias"] = t["cls.predictions.bias"]
    return t, "F32"


def make_llama(config, rng):
    H, V, I = config["hidden"], config["vocab"], config["intermediate_size"]
    heads = config["heads"]
    kv = config.get("kv_heads", heads)
    d = H // heads
    def normal(*shape, std=0.2):
        return rng.normal(0.0, std, shape)
    t = {"model.embed_tokens.weight": normal(V, H),
         "model.norm.weight": 1.0 + normal(H),
         "lm_head.weight": normal(V, H, std=1 / math.sqrt(H))}
    for i in range(config["layers"]):
        pre = f"model.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            t[pre + norm + ".weight"] = 1.0 + normal(H)
        for name, rows, cols in (("self_attn.q_proj", heads * d, H),
                                 ("self_attn.k_proj", kv * d, H),
                                 ("self_attn.v_proj", kv * d, H),
                                 ("self_attn.o_proj", H, H),
                                 ("mlp.gate_proj", I, H),
                                 ("mlp.up_proj", I, H),
                                 ("mlp.down_proj", H, I)):
            t[pre + name + ".weight"] = normal(rows, cols,
                                               std=1 / math.sqrt(cols))
        t[pre + "self_attn.rotary_emb.inv_freq"] = np.ones(d // 2)
    return t, "BF16"


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
    family = config["family"]
    makers = {"gpt": (make_gpt2, gpt2_loss), "bert": (make_bert, bert_loss),
              "llama": (make_llama, llama_loss)}
    if family not in makers:
        sys.exit(f"hf_models.py: family {family!r}: expected gpt, bert or "
                 "llama")
    if family == "bert" and config.get("layer_norm_position") != "post":
        sys.exit("hf_models.py: BertForMaskedLM is post-LN: the config must "
                 "say \"layer_norm_position\": \"post\"")
    make, loss = makers[family]
    if a.command == "make":
        tensors, dtype = make(config, np.random.default_rng(a.seed))
        safetensors_io.write(a.out, tensors, {"format": "pt"}, dtype=dtype)
        return 0
    weights, _ = safetensors_io.read(a.weights)
    tokens = np.fromfile(a.data, dtype="<u2").astype(np.int64)
    batches = Batches(tokens, family, config["microbatch_size"],
                      config["seq_len"], config["vocab"], a.seed, "random")
    losses = [loss(weights, config,
                   *batches.get(global_index(0, 0, 1, m, a.microbatches)))
              for m in range(a.microbatches)]
    print(repr(float(np.mean(losses))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
