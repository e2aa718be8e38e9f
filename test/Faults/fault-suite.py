#!/usr/bin/env python3
"""The project's hostile-input fault suite (docs/robustness.md).

  fault-suite.py --bin BUILD/bin --work DIR [--full] [--seed N] [--jobs N]
                 [--kinds NAME,...] [--log FILE]

Generates cases by kind (mutated and known-invalid configs, IR as text
and as bytecode, pass options and compile flags, checkpoints, Hugging Face
checkpoints, token files, executables' manifests, executable flags, output
targets, cluster files, Chrome traces), runs each tool on a tiny model, classifies every outcome
as clear error, crash, hang, wrong or accepted (cases.py), and prints the
table: input kind, cases tried, and the count of each outcome. Exits 1 when
any case crashed, hung or was wrong, so that ctest fails.

The short mode (the default, ctest's) runs every named case and a few
mutants of each kind; --full runs about 2,200 cases. The same --seed gives
the same cases.
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Shared with test/EndToEnd: safetensors_file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))

import kind_bytecode  # noqa: E402
import kind_checkpoint  # noqa: E402
import kind_cluster  # noqa: E402
import kind_config  # noqa: E402
import kind_exe_flags  # noqa: E402
import kind_hf  # noqa: E402
import kind_ir  # noqa: E402
import kind_manifest  # noqa: E402
import kind_options  # noqa: E402
import kind_outputs  # noqa: E402
import kind_tokens  # noqa: E402
import kind_trace  # noqa: E402
from fixtures import Fixtures  # noqa: E402

# name -> (generator, mutants in the short mode, mutants in --full)
KINDS = {
    "config": (kind_config.cases, 20, 400),
    "ir": (kind_ir.cases, 10, 150),
    "bytecode": (kind_bytecode.cases, 6, 150),
    "options": (kind_options.cases, 0, 0),
    "checkpoints": (kind_checkpoint.cases, 6, 300),
    "tokens": (kind_tokens.cases, 6, 150),
    "hf": (kind_hf.cases, 4, 100),
    "manifests": (kind_manifest.cases, 6, 150),
    "clusters": (kind_cluster.cases, 6, 150),
    "traces": (kind_trace.cases, 6, 150),
    "exe-flags": (kind_exe_flags.cases, 0, 0),
    "outputs": (kind_outputs.cases, 0, 0),
}
COLUMNS = ["clear", "crash", "hang", "wrong", "accepted"]
HEADERS = ["clear error", "crash", "hang", "wrong", "accepted"]


def table(cases):
    rows = {}
    for c in cases:
        row = rows.setdefault(c.kind, {k: 0 for k in COLUMNS})
        row[c.verdict] += 1
    header = ["input kind", "cases"] + HEADERS
    lines = [header]
    total = {k: 0 for k in COLUMNS}
    for kind, row in rows.items():
        lines.append([kind, str(sum(row.values()))] +
                     [str(row[k]) for k in COLUMNS])
        for k in COLUMNS:
            total[k] += row[k]
    lines.append(["total", str(sum(total.values()))] +
                 [str(total[k]) for k in COLUMNS])
    widths = [max(len(l[i]) for l in lines) for i in range(len(header))]
    out = []
    for n, l in enumerate(lines):
        out.append("| " + " | ".join(
            l[i].ljust(widths[i]) if i == 0 else l[i].rjust(widths[i])
            for i in range(len(l))) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 1) + ("-" if i == 0 else ":")
                                      for i, w in enumerate(widths)) + "|")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="the build's bin directory")
    p.add_argument("--work", required=True, help="scratch directory "
                   "(emptied first)")
    p.add_argument("--full", action="store_true", help="about 2,200 cases")
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--kinds", default=",".join(KINDS),
                   help="comma-separated subset of: " + ", ".join(KINDS))
    p.add_argument("--log", help="write every failing case's command and "
                   "output here (default: WORK/failures.log)")
    p.add_argument("--log-all", action="store_true",
                   help="log every case, not only the failing ones")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        p.error("unknown kind(s) %s (expected some of %s)" %
                (", ".join(unknown), ", ".join(KINDS)))
    if args.jobs < 1:
        p.error("--jobs must be at least 1, got %d" % args.jobs)

    shutil.rmtree(args.work, ignore_errors=True)
    start = time.monotonic()
    fx = Fixtures(os.path.abspath(args.bin), os.path.abspath(args.work))
    fx.build()
    cases = []
    for k in kinds:
        generate, short, full = KINDS[k]
        # One generator per kind, seeded from the suite's seed and the
        # kind's name, so that one kind's cases do not depend on another's.
        rng = random.Random("%d:%s" % (args.seed, k))
        if k in ("checkpoints", "ir"):  # named cases of the full mode too
            cases += generate(fx, rng, full if args.full else short,
                              full=args.full)
        else:
            cases += generate(fx, rng, full if args.full else short)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda c: c.run(), cases))

    log = args.log or os.path.join(args.work, "failures.log")
    bad = [c for c in cases if c.verdict in ("crash", "hang", "wrong")]
    with open(log, "w") as f:
        for c in (cases if args.log_all else bad):
            argv = c.argv() if callable(c.argv) else c.argv
            f.write("== %s: %s: %s (%s)\n$ %s\n%s\n\n" % (
                c.kind, c.name, c.verdict, c.reason,
                " ".join(map(str, argv)), c.outcome.excerpt(20)))
    print(table(cases))
    print("\n%d cases in %.0f s (%s mode, --seed %d)" %
          (len(cases), time.monotonic() - start,
           "full" if args.full else "short", args.seed))
    for c in bad:
        print("%-5s %s: %s: %s" % (c.verdict.upper(), c.kind, c.name,
                                   c.reason[:200]))
    if bad:
        print("\n%d case(s) crashed, hung or were wrong; commands and "
              "output: %s" % (len(bad), log))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
