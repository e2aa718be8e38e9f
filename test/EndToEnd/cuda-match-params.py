#!/usr/bin/env python3
"""cuda-match-params.py --precision fp32|bf16 --init INIT --reference REF
                        --candidate CAND... [--steps K] [--lr X]
                        [--update-rtol R]

The parameter half of test/EndToEnd/cuda-match.sh: a GPU run (CAND, its
rank dump) against the CPU run (REF) of the same compiled model, both
started from INIT and trained K AdamW steps on the same data. Prints one
line per tensor that fails, then a summary line
    params: N tensors, worst W of its allowance (NAME): equal|DIFFERENT
and exits 0 when equal, 1 when not, 2 on unreadable input.

The bound, per tensor, on the update from INIT (bitpipe-compare
--update-from's form; cuda-match.sh's header derives the numbers):
    ||c - r||_2 <= rtol * ||r - init||_2,
  rtol 1e-3 for fp32 (absolute.sh's float32 bound: AdamW turns the rounding
  noise of near-zero gradients into element differences of up to lr per
  step, so no element-wise or max-based 1e-4 bound holds even between the
  CPU runtime and the float64 reference), 0.5 for bf16 (bf16 gradients flip
  the sign of AdamW's update of the elements whose gradient is below their
  rounding error).
One part of every layer is exempt from that bound and checked on its own: the
key third of the attention's qkv bias (elements H .. 2H-1 of
layers.*.attn.qkv.bias). Its gradient is zero in exact arithmetic (adding a
constant to every key adds the same q.b to every score of a query, which the
softmax cancels), so each run's value is AdamW applied to that run's
rounding noise: the two runs agree on nothing there but the bound any AdamW
update obeys, |p - init| <= K * lr * 1.01 (|m^| / sqrt(v^) stays below
1.01 in the first three steps whatever the gradients; the bias is not
decayed), and that is what is checked.

Several CAND files are the rank dumps of one multi-rank run
(test/EndToEnd/cuda-ranks.sh): together they are the model; a tensor that
several ranks hold is read from the first (bitpipe-compare checks that
replicas agree). --update-rtol replaces the precision's rtol (cuda-ranks.sh:
1e-5, its bound for two fp32 GPU runs).

Written against docs/training-semantics.md (the tensors' names are
docs/models.md's); reads the files with reference/safetensors_io.py, not
with the runtime's reader.
"""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "reference"))
import safetensors_io  # noqa: E402

KEY_BIAS = re.compile(r"^layers\.\d+\.attn\.qkv\.bias$")
UPDATE_RTOL = {"fp32": 1e-3, "bf16": 0.5}


def split_key_bias(name, *arrays):
    """(the arrays without their key third, the key thirds) for a qkv bias;
    (the arrays, None) for any other tensor."""
    if not KEY_BIAS.match(name):
        return arrays, None
    h = arrays[0].shape[0] // 3
    rest = tuple(np.concatenate([a[:h], a[2 * h:]]) for a in arrays)
    keys = tuple(a[h:2 * h] for a in arrays)
    return rest, keys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=["fp32", "bf16"], required=True)
    p.add_argument("--init", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True, nargs="+")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--update-rtol", type=float)
    a = p.parse_args()
    update_rtol = (a.update_rtol if a.update_rtol is not None
                   else UPDATE_RTOL[a.precision])
    try:
        init, _ = safetensors_io.read(a.init)
        ref, _ = safetensors_io.read(a.reference)
        cand = {}
        for path in a.candidate:
            tensors, _ = safetensors_io.read(path)
            for name, value in tensors.items():
                cand.setdefault(name, value)
    except (OSError, ValueError, KeyError) as e:
        print(f"cuda-match-params: {e}", file=sys.stderr)
        return 2

    problems = []
    for name in sorted(set(ref) ^ set(cand)):
        where = "the candidate" if name in cand else "the reference"
        problems.append(f"{name}: only in {where}")
    key_bound = a.steps * a.lr * 1.01
    worst, worst_name = 0.0, "-"
    for name in sorted(set(ref) & set(cand)):
        r, c = ref[name], cand[name]
        if name not in init or init[name].shape != r.shape or c.shape != r.shape:
            problems.append(f"{name}: shapes differ (reference {r.shape}, "
                            f"candidate {c.shape}, init "
                            f"{init[name].shape if name in init else 'absent'})")
            continue
        if not np.all(np.isfinite(c)):
            problems.append(f"{name}: the candidate holds NaN or infinity")
            continue
        (r, c, r0), keys = split_key_bias(name, r, c, init[name])
        if keys is not None:
            moved = float(np.max(np.abs(keys[1] - keys[2])))
            if moved > key_bound:
                problems.append(f"{name}[key third]: moved {moved:.3g} from "
                                f"init; AdamW allows at most {key_bound:.3g}")
        err = float(np.linalg.norm(c - r))
        allowed = update_rtol * float(np.linalg.norm(r - r0))
        what = "||c - r||_2"
        ratio = err / allowed if allowed > 0 else (0.0 if err == 0 else np.inf)
        if ratio > worst:
            worst, worst_name = ratio, name
        if not ratio <= 1:
            problems.append(f"{name}: {what} = {err:.3g}, allowed "
                            f"{allowed:.3g} ({update_rtol:g} x "
                            f"||r - init||_2)")
    for line in problems:
        print("cuda-match-params: " + line)
    print(f"params: {len(set(ref) & set(cand))} tensors, worst {worst:.3g} of "
          f"its allowance ({worst_name}): "
          f"{'DIFFERENT' if problems else 'equal'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
