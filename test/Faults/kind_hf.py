"""Hugging Face checkpoints through the executable's --load: exe1's model
written in Hugging Face's layout (--save-hf), split into two shards with a
model.safetensors.index.json, and the index and its directory damaged in
known ways and mutated. An index that loads must give the weights of the
undamaged one: the same losses (docs/huggingface.md, "Loading")."""
import json
import os
import shutil

import mutations
from cases import Case
from fixtures import RUN_FLAGS, losses, nonfinite_loss
from safetensors_file import Safetensors

KIND = "Hugging Face checkpoints (--load)"
INDEX = "model.safetensors.index.json"


def shard(hf_dir, out_dir):
    """Writes the two shards of hf_dir/model.safetensors into out_dir and
    returns the index's JSON (a dict)."""
    st = Safetensors.read(os.path.join(hf_dir, "model.safetensors"))
    names = sorted(st.tensors())
    halves = (names[:len(names) // 2], names[len(names) // 2:])
    weight_map = {}
    total = 0
    for n, part in enumerate(halves):
        file = "model-%05d-of-00002.safetensors" % (n + 1)
        header, data, at = {}, bytearray(), 0
        for name in part:
            begin, end = st.header[name]["data_offsets"]
            entry = dict(st.header[name])
            entry["data_offsets"] = [at, at + end - begin]
            header[name] = entry
            data += st.data[begin:end]
            at += end - begin
            weight_map[name] = file
        total += at
        Safetensors(header, data).write(os.path.join(out_dir, file))
    return {"metadata": {"total_size": total}, "weight_map": weight_map}


def expectation(data):
    """A mutated index that is not JSON is invalid; one that is may load
    (and must then train as the undamaged one) or be refused."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "invalid"
    return "any" if isinstance(value, dict) else "invalid"


def named(index, shard_files):
    """(name, index bytes, edit of the case's directory or None)."""
    first_tensor = sorted(index["weight_map"])[0]
    out = []

    def edit(name, fn, dir_edit=None):
        doc = json.loads(json.dumps(index))
        fn(doc)
        out.append((name, json.dumps(doc).encode(), dir_edit))

    edit("weight-map-missing", lambda d: d.pop("weight_map"))
    edit("weight-map-array", lambda d: d.update(weight_map=[]))
    edit("weight-map-empty", lambda d: d.update(weight_map={}))
    edit("shard-name-number",
         lambda d: d["weight_map"].update({first_tensor: 3}))
    edit("shard-missing",
         lambda d: d["weight_map"].update({first_tensor: "absent.safetensors"}))
    edit("shard-outside-directory",
         lambda d: d["weight_map"].update(
             {first_tensor: "../good/" + shard_files[0]}))
    edit("shard-absolute-path",
         lambda d: d["weight_map"].update({first_tensor: "/etc/passwd"}))
    edit("tensor-in-wrong-shard",
         lambda d: d["weight_map"].update(
             {first_tensor: [f for f in shard_files
                             if f != index["weight_map"][first_tensor]][0]}))
    edit("tensor-dropped", lambda d: d["weight_map"].pop(first_tensor))
    edit("tensor-unknown",
         lambda d: d["weight_map"].update({"lm_head.extra": shard_files[0]}))

    def truncate_shard(path):
        with open(os.path.join(path, shard_files[1]), "r+b") as f:
            f.truncate(os.path.getsize(os.path.join(path, shard_files[1]))
                       - 16)
    edit("shard-truncated", lambda d: None, truncate_shard)

    def shard_directory(path):
        os.remove(os.path.join(path, shard_files[0]))
        os.makedirs(os.path.join(path, shard_files[0]))
    edit("shard-is-directory", lambda d: None, shard_directory)
    text = json.dumps(index).encode()
    out.append(("duplicate-tensor-key",
                text.replace(b'"weight_map": {',
                             b'"weight_map": {"%s": "%s", ' % (
                                 first_tensor.encode(),
                                 shard_files[1].encode()), 1), None))
    out.append(("not-json", text[:len(text) // 2], None))
    out.append(("empty", b"", None))
    return out


def cases(fx, rng, mutants):
    root = fx.path("hf-cases")
    shutil.rmtree(root, ignore_errors=True)
    good_dir = os.path.join(root, "good")
    os.makedirs(good_dir)
    index = shard(fx.hf_dir, good_dir)
    shard_files = sorted(set(index["weight_map"].values()))
    with open(os.path.join(good_dir, INDEX), "w") as f:
        json.dump(index, f)
    result = []

    def case(name, data, expect, dir_edit=None):
        # Each case its own directory: the good shards, its index, its edit.
        case_dir = os.path.join(root, name)

        def prepare():
            shutil.rmtree(case_dir, ignore_errors=True)
            shutil.copytree(good_dir, case_dir)
            with open(os.path.join(case_dir, INDEX), "wb") as f:
                f.write(data)
            if dir_edit:
                dir_edit(case_dir)

        def check(o):
            damage = nonfinite_loss(o)
            if damage or o.status != "accepted":
                return damage
            got = losses(o.output)
            if got != fx.hf_losses:
                return ("loaded, but trains to losses %s, not the undamaged "
                        "checkpoint's %s" % (got, fx.hf_losses))
            return None
        result.append(Case(KIND, name, [fx.exe1, "--data", fx.tokens,
                                        "--steps", 1, "--load",
                                        os.path.join(case_dir, INDEX)]
                           + RUN_FLAGS, expect, prepare=prepare, check=check,
                           env=fx.env, timeout=30))

    good = json.dumps(index).encode()
    case("sharded", good, "valid")
    for name, data, dir_edit in named(index, shard_files):
        case(name, data, "invalid", dir_edit)
    for i in range(mutants):
        data = mutations.mutate(rng, good, mutations.TEXT_MUTATIONS)
        case("mutant-%04d" % i, data, expectation(data))
    return result
