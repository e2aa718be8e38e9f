"""Cluster files through bitpipe-plan --cluster: the repository's clusters
(examples/clusters), values no machine has, and mutants judged by the
ranges docs/clusters.md gives each field (one definition each,
lib/Schedule/Cluster.cpp)."""
import glob
import json
import math
import os

import mutations
from cases import Case, write_when_run
from fixtures import ROOT

KIND = "cluster files (bitpipe-plan)"

# (path, low, high, low exclusive, integer): docs/clusters.md's ranges.
RANGES = [
    (("nodes",), 1, 1e6, False, True),
    (("gpus_per_node",), 1, 1024, False, True),
    (("gpu", "memory_bytes"), 1 << 20, 1e15, False, False),
    (("gpu", "peak_bf16_flops"), 1e6, 1e18, False, False),
    (("gpu", "achievable_fraction"), 0, 1, True, False),
    (("links", "intra_node", "latency"), 0, 10, False, False),
    (("links", "intra_node", "bandwidth"), 1e3, 1e20, False, False),
    (("links", "inter_node", "latency"), 0, 10, False, False),
    (("links", "inter_node", "bandwidth"), 1e3, 1e20, False, False),
]


def _at(value, path):
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def expectation(data):
    """Invalid when not JSON or a field lies outside its range (or is not
    a number); "any" otherwise (the reader's other rules: fields missing
    or unknown, the planner's own limits)."""
    try:
        value = json.loads(data.decode("utf-8"),
                           parse_constant=lambda name: float("nan"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "invalid"
    if not isinstance(value, dict):
        return "invalid"
    for path, low, high, exclusive, integer in RANGES:
        v = _at(value, path)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return "invalid"
        if not math.isfinite(v) or v > high or v < low or \
                (exclusive and v == low) or (integer and v != int(v)):
            return "invalid"
    return "any"


def named(good):
    """(name, bytes): a field at a time out of its range, and shapes that
    are not a cluster."""
    out = []

    def edit(name, path, v):
        doc = json.loads(good)
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = v
        text = json.dumps(doc).encode()
        out.append((name, text.replace(b"123456789.5", b"1e400")))

    edit("peak-flops-1e400", ("gpu", "peak_bf16_flops"), 123456789.5)
    edit("peak-flops-0", ("gpu", "peak_bf16_flops"), 0)
    edit("peak-flops-negative", ("gpu", "peak_bf16_flops"), -1e12)
    edit("peak-flops-string", ("gpu", "peak_bf16_flops"), "134e9")
    edit("memory-1-byte", ("gpu", "memory_bytes"), 1)
    edit("fraction-0", ("gpu", "achievable_fraction"), 0)
    edit("fraction-1.5", ("gpu", "achievable_fraction"), 1.5)
    edit("bandwidth-1e-300", ("links", "intra_node", "bandwidth"), 1e-300)
    edit("latency-negative", ("links", "intra_node", "latency"), -1e-6)
    edit("latency-1e308", ("links", "intra_node", "latency"), 1e308)
    edit("nodes-0", ("nodes",), 0)
    edit("nodes-2^63", ("nodes",), 1 << 63)
    edit("gpus-per-node-1.5", ("gpus_per_node",), 1.5)
    edit("gpus-per-node-1025", ("gpus_per_node",), 1025)
    edit("unknown-field", ("gpu", "peak_fp32_flops"), 1e12)
    doc = json.loads(good)
    del doc["gpu"]
    out.append(("gpu-missing", json.dumps(doc).encode()))
    out.append(("duplicate-key", good.replace(b'"nodes"',
                                              b'"nodes": 2, "nodes"', 1)))
    out += [("empty", b""), ("array", b"[]"), ("not-json", good[:-2])]
    return out


def cases(fx, rng, mutants):
    out_dir = fx.path("clusters")
    os.makedirs(out_dir, exist_ok=True)
    plan = fx.tool("bitpipe-plan")
    seeds = []
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "clusters",
                                           "*.json"))):
        with open(p, "rb") as f:
            seeds.append((os.path.basename(p)[:-5], f.read()))
    result = []

    def case(name, data, expect):
        path = os.path.join(out_dir, name + ".json")
        # Two GPUs of whatever the cluster has: the search stays small.
        result.append(Case(KIND, name, [plan, fx.config, "--cluster", path,
                                        "--global-batch", "4", "--gpus", "2",
                                        "--target", "cpu"],
                           expect, prepare=write_when_run(path, data)))

    for name, data in seeds:
        case(name, data, "valid")
    cpu_dev = dict(seeds)["cpu-dev"]
    for name, data in named(cpu_dev):
        case(name, data, "invalid")
    for i in range(mutants):
        _, source = seeds[i % len(seeds)]
        data = mutations.mutate(rng, source, mutations.TEXT_MUTATIONS)
        case("mutant-%04d" % i, data, expectation(data))
    return result
