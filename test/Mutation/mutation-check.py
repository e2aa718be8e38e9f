#!/usr/bin/env python3
"""mutation-check.py BUILD_DIR [--mutants a,b] [--jobs J] [--tests REGEX]

Would the end-to-end tests notice a broken compiler? For each mutant of
mutants.py (a fault that a compiler bug would put into every program it
compiles), run the project's end-to-end tests (ctest's e2e.* tests, read
from `ctest --show-only=json-v1`, so the list is always the suite's) with
every executable they compile mutated, and report which tests fail - catch
the mutant - and which pass. First the same tests run with no mutant, which
must all pass, or the report would mean nothing.

Run on demand, not in CI (a few minutes per mutant on 2 cores):
    test/Mutation/mutation-check.py build
Exits 0 when every mutant is caught by at least one test.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mutants  # noqa: E402


def suite(build, pattern):
    """The e2e tests: [(name, command, env, timeout, is_fixture_setup)]."""
    text = subprocess.check_output(["ctest", "--show-only=json-v1"],
                                   cwd=build)
    tests = []
    for t in json.loads(text)["tests"]:
        if not re.search(pattern, t["name"]):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(e.split("=", 1) for e in props.get("ENVIRONMENT", []))
        tests.append((t["name"], t["command"], env,
                      float(props.get("TIMEOUT", 300)),
                      "FIXTURES_SETUP" in props))
    return tests


def fake_bin(build, root, mutant):
    """A bin directory whose bitpipe-compile builds mutated executables;
    every other tool is the build's own."""
    real_bin = os.path.join(build, "bin")
    fake = os.path.join(root, "bin")
    os.makedirs(fake)
    for tool in os.listdir(real_bin):
        if tool != "bitpipe-compile":
            os.symlink(os.path.join(real_bin, tool), os.path.join(fake, tool))
    wrapper = os.path.join(fake, "bitpipe-compile")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                f"export BITPIPE_REAL_COMPILE='{real_bin}/bitpipe-compile'\n"
                f"export BITPIPE_MUTANT='{mutant}'\n"
                f"export BITPIPE_RUNTIME_LINK='{build}/lib/bitpipe/"
                "runtime-cpu.rsp'\n"
                f"export BITPIPE_MUTANT_LOG='{root}/mutant.log'\n"
                f"exec '{sys.executable}' '{HERE}/compile_mutant.py' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    return fake


def run_one(test, bin_dir, work_from, work_to, log_dir):
    name, command, env, timeout, _ = test
    command = [c.replace(work_from, work_to) for c in command]
    full_env = dict(os.environ, **env)
    if bin_dir:
        full_env["BITPIPE_BIN"] = bin_dir
    log = os.path.join(log_dir, name + ".log")
    start = time.time()
    with open(log, "w") as out:
        try:
            rc = subprocess.call(command, env=full_env, stdout=out,
                                 stderr=subprocess.STDOUT, timeout=timeout,
                                 start_new_session=True)
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return name, rc, time.time() - start, log


# What a failing test's log says went wrong, most telling first: the
# runtime's fatal error, a comparison's first difference, the progress
# check, then anything that looks like an error.
REASONS = [r"^FAIL ", r"fatal:", r"DIFFERENT$", r"replicas differ|held by no rank",
           r"check_progress:", r"error|FAIL|did not"]


def why(log):
    with open(log, errors="replace") as f:
        lines = [l.strip() for l in f if l.strip()]
    for pattern in REASONS:
        for line in lines:
            if re.search(pattern, line):
                return line[:160]
    return lines[-1][:160] if lines else "(no output)"


def run_suite(tests, build, root, mutant, jobs):
    bin_dir = fake_bin(build, root, mutant) if mutant else None
    work_from = os.path.join(build, "test", "EndToEnd", "work")
    work_to = os.path.join(root, "work")
    logs = os.path.join(root, "logs")
    os.makedirs(logs)
    results = {}
    # Fixture set-ups (the 1-rank references) before the tests using them.
    for phase in (True, False):
        batch = [t for t in tests if t[4] == phase]
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for name, rc, seconds, log in pool.map(
                    lambda t: run_one(t, bin_dir, work_from, work_to, logs),
                    batch):
                results[name] = (rc, seconds, log)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--mutants", default=",".join(mutants.MUTANTS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--tests", default=r"^e2e\.",
                        help="regular expression over ctest test names")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directories (their path is "
                             "printed)")
    a = parser.parse_args()
    build = os.path.abspath(a.build)
    tests = suite(build, a.tests)
    if not tests:
        sys.exit(f"no test of {build} matches {a.tests}")
    names = a.mutants.split(",")
    for n in names:
        if n not in mutants.MUTANTS:
            sys.exit(f"unknown mutant '{n}'; known: "
                     + ", ".join(mutants.MUTANTS))
    top = tempfile.mkdtemp(prefix="bitpipe-mutation-")
    print(f"{len(tests)} tests x (no mutant + {len(names)} mutants), "
          f"{a.jobs} at a time, in {top}")

    baseline = run_suite(tests, build, os.path.join(top, "none"), None,
                         a.jobs)
    broken = [n for n, (rc, _, _) in baseline.items() if rc != 0]
    print(f"\nno mutant: {len(tests) - len(broken)} of {len(tests)} pass")
    for n in broken:
        print(f"  FAILS WITHOUT A MUTANT: {n}: {why(baseline[n][2])}")
    ok = not broken
    summary = []
    for name in names:
        root = os.path.join(top, name)
        results = run_suite(tests, build, root, name, a.jobs)
        caught = sorted(n for n, (rc, _, _) in results.items() if rc != 0)
        missed = sorted(n for n, (rc, _, _) in results.items() if rc == 0)
        changes = []
        if os.path.exists(os.path.join(root, "mutant.log")):
            with open(os.path.join(root, "mutant.log")) as f:
                lines = f.read().splitlines()
            failed = [l for l in lines if l.endswith("BUILD FAILED")]
            if failed:
                sys.exit(f"{name}: a mutated program could not be built, so "
                         f"the tests say nothing: {failed[0]} (logs in "
                         f"{root})")
            changes = [int(l.split()[-2]) for l in lines]
        summary_line = " ".join(mutants.MUTANTS[name].__doc__.split())
        print(f"\n== {name}: {summary_line}")
        print(f"   changed {sum(changes)} places in {len(changes)} "
              f"executables ({sum(1 for c in changes if c == 0)} untouched)")
        print(f"   caught by {len(caught)} of {len(results)} tests")
        for n in caught:
            print(f"     caught  {n}: {why(results[n][2])}")
        for n in missed:
            print(f"     missed  {n}")
        summary.append((name, len(caught), len(results)))
        ok &= bool(caught)
    print("\nmutant                 caught by")
    for name, c, total in summary:
        print(f"{name:22} {c:3d} of {total} tests"
              + ("" if c else "   NOT CAUGHT"))
    if a.keep:
        print(f"\nwork directories kept in {top}")
    else:
        shutil.rmtree(top, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
