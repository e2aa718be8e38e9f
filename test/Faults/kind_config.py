"""Model configurations through bitpipe-import: the repository's configs
(valid), known-invalid values and keys, and mutants
judged by a small oracle."""
import glob
import json
import math
import os
import re

import mutations
from cases import Case, write_when_run
from fixtures import ROOT

KIND = "config (bitpipe-import)"

# The integer fields of bitpipe's schema and of Hugging Face's. A value of
# 2^62 or more is refused whatever the others are: every such size enters
# a tensor's byte count (4 bytes times it, at least) that overflows int64.
# Below, where the limit lies depends on the other sizes (the importer's
# own rule, docs/models.md), so the oracle leaves those mutants to "any".
INT_FIELDS = ("layers", "hidden", "heads", "vocab", "max_positions", "seq_len",
              "microbatch_size", "n_layer", "n_embd", "n_head", "n_positions",
              "vocab_size", "num_hidden_layers", "hidden_size",
              "num_attention_heads", "max_position_embeddings")
EPS_FIELDS = ("layer_norm_epsilon", "layer_norm_eps")
LIMIT = 1 << 62


def seeds():
    paths = sorted(glob.glob(os.path.join(ROOT, "examples", "*.json")) +
                   glob.glob(os.path.join(ROOT, "test", "Inputs", "*.json")) +
                   glob.glob(os.path.join(ROOT, "test", "Import", "Inputs",
                                          "*.json")))
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append((os.path.basename(p), f.read()))
    return out


def expectation(data):
    """What a mutant is known to be: "invalid" when it is not JSON (Python's
    NaN and Infinity extensions included) or a known field has a value no
    model can have; "any" otherwise."""
    def no_constants(name):
        raise ValueError(name)

    def parse(text):
        return json.loads(text, parse_constant=no_constants)
    try:
        text = data.decode("utf-8")
        value = parse(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        # LLVM's JSON parser reads integers with leading zeros ("04"), which
        # JSON does not allow: a harmless leniency, so such a mutant may go
        # either way.
        try:
            parse(re.sub(r"(?<![0-9.eE])0+(?=[0-9])", "", text))
            return "any"
        except (ValueError, UnicodeDecodeError, RecursionError, NameError):
            return "invalid"
    if not isinstance(value, dict):
        return "invalid"
    for key in INT_FIELDS:
        v = value.get(key)
        if key in value and (isinstance(v, bool) or not isinstance(v, int)
                             or v <= 0 or v >= LIMIT):
            if not (isinstance(v, float) and v.is_integer() and
                    0 < v < LIMIT):
                return "invalid"
    for key in EPS_FIELDS:
        v = value.get(key)
        if key in value and (isinstance(v, bool) or
                             not isinstance(v, (int, float)) or
                             not math.isfinite(v) or v <= 0 or v >= 1):
            return "invalid"
    return "any"


def base():
    with open(os.path.join(ROOT, "examples", "gpt-tiny.json")) as f:
        return json.load(f)


def named():
    """(name, text): each refused by a careful importer."""
    b = base()

    def with_(**kw):
        d = dict(b)
        d.update(kw)
        return json.dumps(d)

    hf = {"n_layer": 2, "n_embd": 32, "n_head": 4, "n_positions": 16,
          "vocab_size": 100}
    out = [
        ("eps-1e400", with_(layer_norm_epsilon=0).replace(
            '"layer_norm_epsilon": 0', '"layer_norm_epsilon": 1e400')),
        ("eps-negative", with_(layer_norm_epsilon=-1)),
        ("eps-nan", with_(layer_norm_epsilon=0).replace(
            '"layer_norm_epsilon": 0', '"layer_norm_epsilon": NaN')),
        ("hidden-2^62", with_(hidden=1 << 62)),
        ("vocab-2^62", with_(vocab=1 << 62)),
        ("layers-2^62", with_(layers=1 << 62)),
        ("layers-zero", with_(layers=0)),
        ("layers-negative", with_(layers=-1)),
        ("layers-fraction", with_(layers=1.5)),
        ("layers-string", with_(layers="4")),
        ("heads-zero", with_(heads=0)),
        ("heads-not-dividing-hidden", with_(heads=5)),
        ("vocab-zero", with_(vocab=0)),
        ("seq-len-over-positions", with_(seq_len=128)),
        ("microbatch-zero", with_(microbatch_size=0)),
        ("microbatch-2^63", with_(microbatch_size=0).replace(
            '"microbatch_size": 0', '"microbatch_size": 9223372036854775808')),
        ("family-unknown", with_(family="llama")),
        ("nested-100000", "[" * 100000 + "]" * 100000),
        ("nested-object-100000", '{"a":' * 100000 + "1" + "}" * 100000),
        ("empty", ""),
        ("array", "[]"),
        ("truncated", json.dumps(b)[:40]),
        ("trailing-garbage", json.dumps(b) + " }"),
        ("hf-llama", json.dumps(dict(hf, model_type="llama"))),
        ("hf-gpt-neox", json.dumps(dict(hf, model_type="gpt_neox"))),
        ("hf-gptj", json.dumps(dict(hf, model_type="gptj"))),
        ("hf-n-inner", json.dumps(dict(hf, model_type="gpt2", n_inner=100))),
        ("hf-activation", json.dumps(dict(hf, model_type="gpt2",
                                          activation_function="relu"))),
        ("hf-untied", json.dumps(dict(hf, model_type="gpt2",
                                      tie_word_embeddings=False))),
    ]
    return out


def cases(fx, rng, mutants):
    out_dir = fx.path("config")
    os.makedirs(out_dir, exist_ok=True)

    def case(name, data, expect):
        src = os.path.join(out_dir, name + ".json")
        dst = os.path.join(out_dir, name + ".mlir")

        def check(o):
            if o.status == "accepted" and not (os.path.isfile(dst) and
                                               os.path.getsize(dst) > 0):
                return "exit 0 but no model IR written"
            return None
        return Case(KIND, name, [fx.tool("bitpipe-import"), "--config", src,
                                 "-o", dst], expect,
                    prepare=write_when_run(src, data), check=check)

    result = []
    all_seeds = seeds()
    for name, data in all_seeds:
        result.append(case("seed-" + name[:-5], data, "valid"))
    for name, text in named():
        result.append(case(name, text.encode(), "invalid"))
    for i in range(mutants):
        _, data = rng.choice(all_seeds)
        data = mutations.mutate(rng, data, mutations.TEXT_MUTATIONS)
        result.append(case("mutant-%04d" % i, data, expectation(data)))
    return result
