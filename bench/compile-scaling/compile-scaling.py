#!/usr/bin/env python3
"""How the compiler's cost grows with data-parallel width, micro-batches and
pipeline depth, as ratios measured side by side in one run.

Each measurement is one process of the real tools (bitpipe-import once,
then bitpipe-opt --bitpipe-pipeline or bitpipe-compile), run REPEAT times;
the median wall time and the peak RSS of that process alone (os.wait4) are
kept, with the size of what it wrote. A pair of runs that differ in one
quantity gives the ratio; its target is printed next to it.
A compiler whose output and cost do not depend on dp (one program per
pipeline rank, docs/data-parallel.md) shows 1.0 for the dp rows; one that
copied every rank program per copy would show about the dp ratio, and one
that also listed every copy in every all-reduce its square.

Usage: compile-scaling.py BUILD_DIR [--quick] [--absolute-only] [--repeat R]
                          [--work DIR]
  --quick  no 126-layer rows: a minute.
  --absolute-only  only the 126-layer D=64 N=512 pipeline and compile.
The full run takes several minutes and about 2 GB on this machine.
"""

import argparse
import atexit
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_once(argv, stderr_out=None):
    """Runs argv; returns (seconds, peak RSS in MiB). Raises on failure.
    With stderr_out (a list), appends what the process wrote to stderr."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{err[-2000:]}")
    if stderr_out is not None:
        stderr_out.append(err)
    return seconds, usage.ru_maxrss / 1024.0


def pass_seconds(timing):
    """The passes' part of an --mlir-timing report: its total less parsing
    the input and printing the output."""
    total, io = None, 0.0
    for line in timing.splitlines():
        m = re.match(r"\s+([0-9.]+) \(\s*[0-9.]+%\)\s+(\S.*)$", line)
        if not m:
            continue
        seconds, name = float(m.group(1)), m.group(2).strip()
        if name == "Total":
            total = seconds
        elif name in ("Parser", "Output"):
            io += seconds
    if total is None:
        raise RuntimeError("no --mlir-timing report in:\n" + timing[-2000:])
    return total - io


def measure(argv, output, repeat):
    times, rss = [], []
    for _ in range(repeat):
        t, m = run_once(argv)
        times.append(t)
        rss.append(m)
    size = os.path.getsize(output) / 2**20 if os.path.exists(output) else float("nan")
    return {"s": statistics.median(times), "mib": max(rss), "out_mib": size}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work")
    ap.add_argument("--absolute-only", action="store_true",
                    help="only the 126-layer D=64 N=512 rows")
    a = ap.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    work = a.work or tempfile.mkdtemp(prefix="bitpipe-compile-scaling.")
    os.makedirs(work, exist_ok=True)
    if not a.work:  # Removed however the run ends.
        atexit.register(shutil.rmtree, work, True)
    tool = lambda name: os.path.join(bin_dir, name)

    gpt96 = os.path.join(REPO, "examples", "gpt-96.json")
    cfg = json.load(open(gpt96))
    cfg["layers"] = 126
    gpt126 = os.path.join(work, "gpt-126.json")
    json.dump(cfg, open(gpt126, "w"))
    models = {}
    for name, config in (("gpt-96", gpt96), ("gpt-126", gpt126)):
        models[name] = os.path.join(work, name + ".mlir")
        run_once([tool("bitpipe-import"), "gpt", "--config", config, "-o", models[name]])

    def pipeline_argv(model, d, n, dp, out):
        return [tool("bitpipe-opt"), models[model],
                f"--bitpipe-pipeline=devices={d} microbatches={n} schedule=bitpipe dp={dp}",
                "-o", out]

    def passes(model, d, n, dp):
        """The pipeline's passes alone (--mlir-timing), median of REPEAT."""
        out = os.path.join(work, f"{model}-d{d}-n{n}-dp{dp}-timed.mlir")
        argv = pipeline_argv(model, d, n, dp, out) + ["--mlir-timing"]
        seconds, rss = [], []
        for _ in range(a.repeat):
            reports = []
            _, m = run_once(argv, reports)
            seconds.append(pass_seconds(reports[0]))
            rss.append(m)
        size = os.path.getsize(out) / 2**20
        os.remove(out)
        return {"s": statistics.median(seconds), "mib": max(rss), "out_mib": size}

    def pipeline(model, d, n, dp):
        out = os.path.join(work, f"{model}-d{d}-n{n}-dp{dp}.mlir")
        r = measure(pipeline_argv(model, d, n, dp, out), out, a.repeat)
        os.remove(out)
        return r

    def compile_(model_cfg, d, n, dp):
        out = os.path.join(work, f"exe-d{d}-n{n}-dp{dp}")
        argv = [tool("bitpipe-compile"), model_cfg, "--devices", str(d), "--schedule", "bitpipe",
                "--microbatches", str(n), "--dp", str(dp), "-o", out]
        r = measure(argv, out, a.repeat)
        os.remove(out)
        return r

    rows = []  # (what, small, large, ratio key, target text)

    def pair(what, f, x, y, target):
        rx, ry = f(*x), f(*y)
        rows.append((what, rx, ry, target))
        print(f"  measured: {what}", file=sys.stderr, flush=True)

    if not a.absolute_only:
        pair("pipeline GPT-96 D=8 N=32: dp=1 -> dp=128",
             pipeline, ("gpt-96", 8, 32, 1), ("gpt-96", 8, 32, 128), "1.2")
        pair("pipeline GPT-96 D=8 dp=1: N=64 -> N=128",
             pipeline, ("gpt-96", 8, 64, 1), ("gpt-96", 8, 128, 1), "1.2")
        # Twice the devices is twice the IR (D programs of N steps each):
        # a pass quadratic in D would show a ratio near 4.
        pair("pipeline 126-layer GPT N=128 dp=1: D=32 -> D=64",
             pipeline, ("gpt-126", 32, 128, 1), ("gpt-126", 64, 128, 1), "2.2 (2x IR)")
        # The written programs keep their steady state as bitpipe.repeat
        # (docs/repetition.md): their size should not move with N.
        pair("pipeline 126-layer GPT D=64 dp=1: N=512 -> N=1024",
             pipeline, ("gpt-126", 64, 512, 1), ("gpt-126", 64, 1024, 1), "1.2")
        pair("bitpipe-compile GPT-96 D=8 N=64: dp=1 -> dp=128 (1,024 GPUs)",
             compile_, (gpt96, 8, 64, 1), (gpt96, 8, 64, 128), "1.2")
        pair("bitpipe-compile GPT-96 D=8 dp=1: N=64 -> N=128",
             compile_, (gpt96, 8, 64, 1), (gpt96, 8, 128, 1), "1.2")

        print(f"compile scaling: bitpipe schedule, median of {a.repeat} runs, "
              f"this machine\n")
        print("| what | time (s) | ratio | peak RSS (MiB) | ratio | output (MiB) | ratio | target ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for what, x, y, target in rows:
            print(f"| {what} | {x['s']:.2f} -> {y['s']:.2f} | {y['s'] / x['s']:.2f} "
                  f"| {x['mib']:.0f} -> {y['mib']:.0f} | {y['mib'] / x['mib']:.2f} "
                  f"| {x['out_mib']:.1f} -> {y['out_mib']:.1f} | {y['out_mib'] / x['out_mib']:.2f} "
                  f"| <= {target} |")

    if not a.quick or a.absolute_only:
        print("\nabsolute, 126-layer GPT, D=64 N=512 dp=1 (the targets: "
              "pipeline < 1 s, whole compile < 10 s):\n")
        print("| what | time (s) | peak RSS (MiB) | output (MiB) |")
        print("|---|---|---|---|")
        for what, f, args in (
                ("pipeline (bitpipe-opt: parse, passes, print the text)",
                 pipeline, ("gpt-126", 64, 512, 1)),
                ("pipeline passes alone (--mlir-timing less parser and output)",
                 passes, ("gpt-126", 64, 512, 1)),
                ("bitpipe-compile", compile_, (gpt126, 64, 512, 1))):
            try:
                r = f(*args)
                print(f"| {what} | {r['s']:.2f} | {r['mib']:.0f} | {r['out_mib']:.1f} |")
            except RuntimeError as e:  # A limit of the compiler is a result too.
                reason = next((l for l in str(e).splitlines() if "error:" in l), str(e))
                print(f"| {what} | fails: {reason.strip()} | | |")


if __name__ == "__main__":
    main()
