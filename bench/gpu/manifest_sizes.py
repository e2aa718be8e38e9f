#!/usr/bin/env python3
"""manifest_sizes.py EXECUTABLE

The sizes of the transfers a compiled executable makes, read from the
manifest it embeds (runtime/include/bitpipe/program.h: one JSON object,
stored as a NUL-terminated string), for bench/gpu/nccl-raw.cpp to repeat:

  P2P bytes=B            each distinct size of a stage function's output
                         (an activation sent to the next stage; its gradient
                         comes back with the same size);
  ALLREDUCE rank=R bucket=bN bytes=B ranks=G
                         each bucket of each rank: its parameters' fp32
                         gradients (the accumulators are fp32 in both
                         precisions), each tensor rounded up to the 128
                         elements it is aligned to (runtime/lib/exec/
                         ParamStore.h: the all-reduce runs on the bucket's
                         whole range), over the group's world ranks G.
Exit status 0; 2 when no manifest is found.
"""
import json
import math
import sys

ALIGNMENT = 128  # elements; ParamStore.h's kParamAlignment
DTYPE_BYTES = {"f32": 4, "bf16": 2, "i32": 4}


def manifest(path):
    with open(path, "rb") as f:
        blob = f.read()
    at = blob.find(b'"buckets"')
    while at >= 0:
        start = blob.rfind(b"\0", 0, at) + 1
        end = blob.find(b"\0", at)
        text = blob[start:end].decode("utf-8", "replace")
        brace = text.find("{")
        if brace >= 0:
            try:
                doc = json.loads(text[brace:])
                if "ranks" in doc and "params" in doc:
                    return doc
            except ValueError:
                pass
        at = blob.find(b'"buckets"', end)
    return None


def main():
    if len(sys.argv) != 2:
        print("usage: manifest_sizes.py EXECUTABLE", file=sys.stderr)
        return 2
    doc = manifest(sys.argv[1])
    if doc is None:
        print(f"manifest_sizes: {sys.argv[1]}: no embedded manifest found "
              "(not a bitpipe executable?)", file=sys.stderr)
        return 2
    shapes = {p["name"]: p["shape"] for p in doc["params"]}
    sizes = set()
    for fn in doc["functions"]:
        for r in fn.get("results", []):
            # The loss is an output too: a scalar, never sent.
            if r.get("role") == "output" and math.prod(r["shape"]) > 1:
                sizes.add(math.prod(r["shape"]) * DTYPE_BYTES.get(r["dtype"], 4))
    for b in sorted(sizes):
        print(f"P2P bytes={b}")
    groups = doc.get("groups", [])
    for rank, spec in enumerate(doc["ranks"]):
        for i, bucket in enumerate(spec.get("buckets", [])):
            elements = sum(-(-math.prod(shapes[p]) // ALIGNMENT) * ALIGNMENT
                           for p in bucket["params"])
            members = ",".join(str(r) for r in groups[bucket["group"]])
            print(f"ALLREDUCE rank={rank} bucket=b{i} bytes={4 * elements} "
                  f"ranks={members}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
