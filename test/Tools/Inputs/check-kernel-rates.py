"""Checks the kernel_rates object bench-kernel-rates wrote.

    check-kernel-rates.py FILE TOKENS DIMS SEQ_LENS HEAD_DIMS

The grid lists are the run's flags (comma-separated). Every linear point of
TOKENS x DIMS x DIMS and every attention point of SEQ_LENS x HEAD_DIMS,
causal and not, must be there once, and every rate must be a positive,
finite number. Prints a summary line; exits non-zero naming the first
problem.
"""

import itertools
import json
import math
import sys


def ints(text):
    return [int(v) for v in text.split(",")]


def fail(message):
    sys.exit("check-kernel-rates: " + message)


def check_rates(entry, keys):
    for key in keys:
        value = entry.get(key)
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and value > 0):
            fail(f"{entry}: {key} is {value!r}, not a positive finite rate")


def main():
    path, tokens, dims, seq_lens, head_dims = sys.argv[1:]
    with open(path) as f:
        rates = json.load(f)
    if not isinstance(rates.get("measured"), str):
        fail("no 'measured' string")

    linear = rates["linear"]
    want = sorted(itertools.product(ints(tokens), ints(dims), ints(dims)))
    have = sorted((e["tokens"], e["in"], e["out"]) for e in linear)
    if have != want:
        fail(f"linear points {have}, expected {want}")
    for entry in linear:
        check_rates(entry, ["forward", "input_grad", "weight_grad"])

    attention = rates["attention"]
    want = sorted(itertools.product(ints(seq_lens), ints(head_dims),
                                    [False, True]))
    have = sorted((e["seq_len"], e["head_dim"], e["causal"])
                  for e in attention)
    if have != want:
        fail(f"attention points {have}, expected {want}")
    for entry in attention:
        check_rates(entry, ["forward", "backward"])

    check_rates(rates, ["other"])
    print(f"{len(linear)} linear, {len(attention)} attention, other: "
          "every rate positive and finite")


if __name__ == "__main__":
    main()
