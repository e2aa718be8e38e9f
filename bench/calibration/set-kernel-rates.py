#!/usr/bin/env python3
"""Puts a bench-kernel-rates output into a cluster file as its kernel_rates.

    bench/calibration/set-kernel-rates.py CLUSTER.json RATES.json

The object's field name and its fields are sched::kernel_rates_field's
(include/bitpipe/Schedule/KernelRates.h), which bench-kernel-rates writes
by. The cluster file (docs/clusters.md) is rewritten through a temporary file
and a rename, its other fields as they were (in order), each kernel_rates
entry on one line so that the grid stays readable.
"""
import json
import os
import sys
import tempfile


def encode(value, indent=None, level=0):
    """JSON text, numbers in their shortest %g form (134e9, not
    134000000000.0); objects and arrays on one line without indent."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "%.6g" % value if isinstance(value, float) else str(value)
    if isinstance(value, list):
        items = [encode(v, indent, level + 1) for v in value]
        opener, closer = "[", "]"
    else:
        items = [json.dumps(k) + ": " + encode(v, indent, level + 1)
                 for k, v in value.items()]
        opener, closer = "{", "}"
    if indent is None or not items:
        return opener + ", ".join(items) + closer
    pad = " " * (indent * (level + 1))
    return (opener + "\n" + ",\n".join(pad + i for i in items) + "\n" +
            " " * (indent * level) + closer)


def compact(value):
    return encode(value)


def render(cluster):
    lines = ["{"]
    items = list(cluster.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        if key == "kernel_rates":
            lines.append('  "kernel_rates": {')
            parts = list(value.items())
            for j, (k, v) in enumerate(parts):
                inner = "," if j + 1 < len(parts) else ""
                if isinstance(v, list):
                    lines.append(f'    "{k}": [')
                    lines += [f"      {compact(e)}" + ("," if n + 1 < len(v) else "")
                              for n, e in enumerate(v)]
                    lines.append("    ]" + inner)
                else:
                    lines.append(f'    "{k}": {compact(v)}{inner}')
            lines.append("  }" + comma)
        else:
            text = encode(value, indent=2, level=1)
            lines.append(f'  "{key}": {text}{comma}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: set-kernel-rates.py CLUSTER.json RATES.json")
    cluster_path, rates_path = sys.argv[1:]
    try:
        with open(cluster_path) as f:
            cluster = json.load(f)
        with open(rates_path) as f:
            rates = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"set-kernel-rates.py: {e}")
    if not isinstance(cluster, dict) or not isinstance(rates, dict):
        sys.exit("set-kernel-rates.py: expected a JSON object in each file")
    cluster["kernel_rates"] = rates  # kernel_rates_field::kObject
    folder = os.path.dirname(os.path.abspath(cluster_path))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False) as tmp:
        tmp.write(render(cluster))
    os.replace(tmp.name, cluster_path)


if __name__ == "__main__":
    main()
