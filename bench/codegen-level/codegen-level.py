#!/usr/bin/env python3
"""What LLVM's optimisation level buys in a compiled executable's step time,
against what it costs in compile time, measured side by side in one run.

The code bitpipe-compile generates is glue: the rank functions call the
runtime's bp_rt_* functions, the stage functions call its kernels (which the
runtime's own build optimises). This benchmark compiles one model at -O0 and
at -O2 and trains each for the same steps under mpirun, alternating the two
executables REPEAT times so that the machine's noise falls on both; it
prints the median step time of each and their ratio, and the compile times
and their ratio. A model of many thin layers makes the glue's share of a
step as large as it gets: hidden 64, so the kernels do little per call.

Usage: codegen-level.py BUILD_DIR [--layers L] [--steps S] [--repeat R]
                        [--compile-layers L] [--work DIR]
  --compile-layers: also time the -O0 and -O2 compiles of GPT-96's
  configuration with L layers at D=64, N=512 (126: compile-scaling.py's).
"""

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def timed(argv):
    start = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def step_seconds(metrics, skip):
    """The steps' wall seconds from a --metrics file, after `skip` warm-up steps."""
    rows = [json.loads(line) for line in open(metrics)]
    return [r["seconds"] for r in rows[skip:]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compile-layers", type=int)
    ap.add_argument("--work")
    a = ap.parse_args()
    tool = lambda name: os.path.join(a.build, "bin", name)
    work = a.work or tempfile.mkdtemp(prefix="bitpipe-codegen-level.")
    os.makedirs(work, exist_ok=True)
    if not a.work:
        atexit.register(shutil.rmtree, work, True)

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cfg = json.load(open(os.path.join(repo, "examples", "gpt-tiny.json")))
    cfg.update({"layers": a.layers, "hidden": 64, "heads": 2})
    model = os.path.join(work, "thin.json")
    json.dump(cfg, open(model, "w"))
    tokens = os.path.join(work, "tokens.bin")
    licenses = sorted(os.path.join("/usr/share/common-licenses", f)
                      for f in os.listdir("/usr/share/common-licenses"))
    subprocess.run([tool("bitpipe-tokenize"), "-o", tokens] + licenses,
                   check=True, stdout=subprocess.DEVNULL)

    levels = (0, 2)
    exe, compile_s = {}, {}
    for o in levels:
        exe[o] = os.path.join(work, f"train-O{o}")
        compile_s[o] = timed([tool("bitpipe-compile"), model, "--devices", "2",
                              "--schedule", "bitpipe", "--microbatches", "8",
                              f"-O{o}", "-o", exe[o]])
    steps = {o: [] for o in levels}
    for r in range(a.repeat):
        for o in (levels if r % 2 == 0 else levels[::-1]):
            metrics = os.path.join(work, f"m-O{o}-{r}.jsonl")
            subprocess.run(MPIRUN + ["-np", "2", exe[o], "--data", tokens, "--steps",
                                     str(a.steps), "--metrics", metrics],
                           check=True, stdout=subprocess.DEVNULL)
            steps[o] += step_seconds(metrics, skip=3)
        print(f"  round {r + 1} of {a.repeat} done", file=sys.stderr, flush=True)

    med = {o: statistics.median(steps[o]) for o in levels}
    print(f"codegen level: GPT {a.layers} layers of hidden 64, bitpipe D=2 N=8, "
          f"2 ranks on this machine; median of {len(steps[0])} steps each "
          f"({a.repeat} alternating runs of {a.steps} steps, 3 warm-up steps dropped)\n")
    print("| what | -O0 | -O2 | O2 / O0 |")
    print("|---|---|---|---|")
    print(f"| step time (s) | {med[0]:.4f} | {med[2]:.4f} | {med[2] / med[0]:.2f} |")
    print(f"| compile time (s) | {compile_s[0]:.2f} | {compile_s[2]:.2f} "
          f"| {compile_s[2] / compile_s[0]:.2f} |")
    if a.compile_layers:
        big_cfg = json.load(open(os.path.join(repo, "examples", "gpt-96.json")))
        big_cfg["layers"] = a.compile_layers
        big_model = os.path.join(work, "big.json")
        json.dump(big_cfg, open(big_model, "w"))
        big = {}
        for o in levels:
            out = os.path.join(work, f"big-O{o}")
            big[o] = timed([tool("bitpipe-compile"), big_model, "--devices", "64",
                            "--schedule", "bitpipe", "--microbatches", "512",
                            f"-O{o}", "-o", out])
            os.remove(out)
        print(f"| compile time, GPT {a.compile_layers} layers D=64 N=512 (s) "
              f"| {big[0]:.2f} | {big[2]:.2f} | {big[2] / big[0]:.2f} |")


if __name__ == "__main__":
    main()
