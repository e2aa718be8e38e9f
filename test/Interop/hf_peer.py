#!/usr/bin/env python3
"""hf_peer.py: the Hugging Face transformers side of the interop tests.

Run with the peer environment's python (bench/peers/setup.sh --print-dir).

  hf_peer.py make --type gpt2|llama|bert|mistral --out DIR
             [--max-shard-size SIZE] [--seed N]
      A random tiny model made by transformers (its own initialisation,
      torch.manual_seed(N)) and written with save_pretrained, in one file
      or, with --max-shard-size, in shards with an index.
  hf_peer.py loss --hf DIR --data TOKENS --seq-len T --microbatch-size B
             --microbatches N [--seed S] [--class auto|mistral]
      The loss transformers computes for the N micro-batches of bitpipe's
      first training step (sample groups 0 .. N-1 of docs/training-
      semantics.md, from test/EndToEnd/reference/batches.py) with the
      weights in DIR: the mean over the micro-batches of each one's mean
      cross-entropy over its labelled positions, which is bitpipe's step
      loss. Prints {"loss": ..., "class": ..., "microbatch_losses": [...]}.
      --class mistral loads a LLaMA folder into MistralForCausalLM (the
      same graph when the sliding window covers the sequence).

The models are fp32 with eager attention and no dropout; the inputs and the
targets are given as bitpipe gives them (GPT-2 and LLaMA: the next tokens,
not Hugging Face's `labels`, which it would shift again; BERT: the masked
labels, -100 elsewhere).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "EndToEnd", "reference"))
from batches import Batches  # noqa: E402

PROG = "hf_peer.py"

# Tiny shapes within what bitpipe builds (docs/models.md, docs/llama.md):
# the sequence fits max positions, heads divide the hidden size.
TINY = {
    "gpt2": dict(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                 activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                 layer_norm_epsilon=1e-5, bos_token_id=None, eos_token_id=None),
    "llama": dict(vocab_size=256, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu"),
    "bert": dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=256, max_position_embeddings=64, hidden_act="gelu",
                 type_vocab_size=2, layer_norm_eps=1e-12, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0),
    "mistral": dict(vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=64,
                    rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
                    sliding_window=None),
}


def make(a):
    import torch
    import transformers

    torch.manual_seed(a.seed)
    cfg_cls, model_cls = {
        "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel),
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "bert": (transformers.BertConfig, transformers.BertForMaskedLM),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
    }[a.type]
    config = cfg_cls(**TINY[a.type])
    model = model_cls(config)
    kwargs = {"max_shard_size": a.max_shard_size} if a.max_shard_size else {}
    model.save_pretrained(a.out, **kwargs)
    files = sorted(os.listdir(a.out))
    print(json.dumps({"type": a.type, "class": model_cls.__name__, "files": files,
                      "parameters": sum(p.numel() for p in model.parameters())}))


def family_of(model_type):
    if model_type == "gpt2":
        return "gpt"
    if model_type in ("llama", "mistral"):
        return "llama"
    if model_type == "bert":
        return "bert"
    sys.exit("%s: model_type %r is none of gpt2, llama, mistral, bert" % (PROG, model_type))


def loss(a):
    import numpy as np
    import torch
    import torch.nn.functional as F
    import transformers

    torch.set_num_threads(1)
    with open(os.path.join(a.hf, "config.json")) as f:
        mtype = json.load(f).get("model_type")
    family = family_of(mtype)
    if a.cls == "mistral":
        if family != "llama":
            sys.exit("%s: --class mistral needs a llama or mistral folder, not %s" % (PROG, mtype))
        fields = transformers.LlamaConfig.from_pretrained(a.hf).to_dict()
        for k in ("model_type", "architectures", "transformers_version"):
            fields.pop(k, None)
        config = transformers.MistralConfig(**fields)
        config.sliding_window = None
        model = transformers.MistralForCausalLM.from_pretrained(a.hf, config=config, attn_implementation="eager",
                                                                 dtype=torch.float32)
    elif family == "bert":
        model = transformers.BertForMaskedLM.from_pretrained(a.hf, attn_implementation="eager", dtype=torch.float32)
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(a.hf, attn_implementation="eager",
                                                                  dtype=torch.float32)
    model.eval()  # no dropout; the graph is the training graph otherwise
    vocab = model.config.vocab_size
    data = np.fromfile(a.data, dtype="<u2").astype(np.int64)  # BERT labels hold -100
    windows = Batches(data, family, a.microbatch_size, a.seq_len, vocab, a.seed, "random")
    losses = []
    with torch.no_grad():
        for g in range(a.microbatches):
            xs, ys = windows.get(g)
            x = torch.from_numpy(xs.astype(np.int64))
            y = torch.from_numpy(ys.astype(np.int64))
            logits = model(input_ids=x).logits
            losses.append(float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), y.reshape(-1),
                                                ignore_index=-100)))
    print(json.dumps({"loss": sum(losses) / len(losses), "class": type(model).__name__,
                      "microbatch_losses": losses}))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--type", required=True, choices=sorted(TINY))
    m.add_argument("--out", required=True)
    m.add_argument("--max-shard-size", help="e.g. 40KB: shards and an index")
    m.add_argument("--seed", type=int, default=0)
    l = sub.add_parser("loss")
    l.add_argument("--hf", required=True)
    l.add_argument("--data", required=True)
    l.add_argument("--seq-len", type=int, required=True)
    l.add_argument("--microbatch-size", type=int, required=True)
    l.add_argument("--microbatches", type=int, required=True)
    l.add_argument("--seed", type=int, default=0)
    l.add_argument("--class", dest="cls", choices=["auto", "mistral"], default="auto")
    a = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if a.cmd == "make":
        make(a)
    else:
        loss(a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
