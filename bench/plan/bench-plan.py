#!/usr/bin/env python3
"""Times bitpipe-plan's whole search (its target: under 10 s).

    bench/plan/bench-plan.py [--build build] [--runs 5] [-- PLAN ARGS...]

Runs the tool end to end (process start, model import at every micro-batch
size, cost analysis, every candidate generated and simulated, the report)
and prints each run's wall time, the median, and how many configurations
the search considered and kept. Without PLAN ARGS: GPT-96 on the 32 GPUs of
examples/clusters/a100-4x8.json at a global batch of 256 sequences under an
80 GiB cap. A benchmark, not a test: it checks nothing. Results and the
command: bench/RESULTS.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = [
    os.path.join(ROOT, "examples", "gpt-96.json"),
    "--cluster", os.path.join(ROOT, "examples", "clusters", "a100-4x8.json"),
    "--global-batch", "256", "--memory-cap", "80GiB",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("plan_args", nargs="*")
    args = parser.parse_args()
    tool = os.path.join(args.build, "bin", "bitpipe-plan")
    if not os.access(tool, os.X_OK):
        sys.exit(f"bench-plan: {tool} is not an executable (build the "
                 "bitpipe-plan target, or give --build)")
    plan_args = args.plan_args or DEFAULT

    times = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.json")
        for run in range(args.runs):
            start = time.perf_counter()
            proc = subprocess.run([tool, *plan_args, "--json", out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                sys.exit(f"bench-plan: bitpipe-plan exited {proc.returncode}:\n"
                         + proc.stderr)
            print(f"run {run + 1}: {times[-1]:.3f} s")
        with open(out) as f:
            result = json.load(f)
    best = result["plans"][0]
    print(f"bitpipe-plan {' '.join(plan_args)}")
    print(f"median {statistics.median(times):.3f} s over {args.runs} runs "
          f"(min {min(times):.3f}, max {max(times):.3f}); "
          f"{result['considered']} configurations considered, "
          f"{result['feasible']} fit")
    print(f"best: {best['schedule']} D={best['devices']} dp={best['dp']} "
          f"v={best['chunks_per_device']} mb={best['microbatch_size']} "
          f"N={best['microbatches']}: {best['step_time_s']:.3f} s/step, "
          f"{best['tokens_per_s']:.0f} tokens/s")


if __name__ == "__main__":
    main()
