#!/usr/bin/env python3
"""hf-files.py COMMAND ...: the file edits and comparisons of
huggingface.sh (docs/huggingface.md), on safetensors files as bytes.
Standard library only.

  shard IN DIR            DIR/model-0000{1,2}-of-00002.safetensors (the
                          first half of IN's tensors, the rest) and
                          DIR/model.safetensors.index.json
  drop IN OUT NAME        OUT: IN without tensor NAME
  rename IN OUT OLD NEW   OUT: IN with tensor OLD named NEW
  cut-row IN OUT NAME     OUT: IN with the last row of tensor NAME gone
  same A B [SUFFIX...]    every tensor of A, but those whose names end in a
                          SUFFIX, is in B with the same dtype, shape and
                          bytes, and B has no other; a name may carry the
                          prefix "transformer." in one file and not in the
                          other (GPT2Model vs GPT2LMHeadModel)
  same-weights A B        bitpipe checkpoints: the same parameters (every
                          tensor but optim.*), bit for bit
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from safetensors_file import Safetensors  # noqa: E402

PREFIX = "transformer."


def tensor_bytes(st, name):
    begin, end = st.header[name]["data_offsets"]
    return bytes(st.data[begin:end])


def build(tensors, metadata=None):
    """A Safetensors of [(name, dtype, shape, bytes)]."""
    header = {"__metadata__": metadata or {"format": "pt"}}
    data = bytearray()
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return Safetensors(header, data)


def entries(st):
    return [(n, st.header[n]["dtype"], st.header[n]["shape"],
             tensor_bytes(st, n)) for n in st.tensors()]


def shard(src, out):
    st = Safetensors.read(src)
    all_ = entries(st)
    half = len(all_) // 2
    weight_map = {}
    for i, part in enumerate((all_[:half], all_[half:])):
        name = f"model-0000{i + 1}-of-00002.safetensors"
        build(part).write(os.path.join(out, name))
        weight_map.update({t[0]: name for t in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": len(st.data)},
                   "weight_map": weight_map}, f, indent=2)


def edit(src, dst, fn):
    build([t for t in map(fn, entries(Safetensors.read(src))) if t]).write(dst)


def canonical(name):
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def same(a_path, b_path, excluded):
    """The differences of A and B, but the tensors `excluded` says yes to."""
    a, b = Safetensors.read(a_path), Safetensors.read(b_path)
    want = {canonical(n): (d, s, r) for n, d, s, r in entries(a)
            if not excluded(n)}
    got = {canonical(n): (d, s, r) for n, d, s, r in entries(b)
           if not excluded(n)}
    problems = [f"only in {a_path}: {n}" for n in sorted(want.keys() - got.keys())]
    problems += [f"only in {b_path}: {n}" for n in sorted(got.keys() - want.keys())]
    for n in sorted(want.keys() & got.keys()):
        if want[n][:2] != got[n][:2]:
            problems.append(f"{n}: {want[n][:2]} vs {got[n][:2]}")
        elif want[n][2] != got[n][2]:
            problems.append(f"{n}: the data differs")
    return problems


def main(argv):
    cmd = argv[0]
    if cmd == "shard":
        shard(argv[1], argv[2])
    elif cmd == "drop":
        edit(argv[1], argv[2], lambda t: None if t[0] == argv[3] else t)
    elif cmd == "rename":
        edit(argv[1], argv[2],
             lambda t: (argv[4],) + t[1:] if t[0] == argv[3] else t)
    elif cmd == "cut-row":
        def cut(t):
            if t[0] != argv[3]:
                return t
            shape = [t[2][0] - 1] + t[2][1:]
            return (t[0], t[1], shape, t[3][:len(t[3]) * shape[0] // t[2][0]])
        edit(argv[1], argv[2], cut)
    elif cmd in ("same", "same-weights"):
        suffixes = tuple(argv[3:])
        if cmd == "same":
            problems = same(argv[1], argv[2],
                            lambda n: bool(suffixes) and n.endswith(suffixes))
        else:
            problems = same(argv[1], argv[2],
                            lambda n: n.startswith("optim."))
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
