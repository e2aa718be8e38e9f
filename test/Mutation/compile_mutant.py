#!/usr/bin/env python3
"""compile_mutant.py: stands in for bitpipe-compile during a mutation check.

Called with bitpipe-compile's own arguments. An executable (the default
--emit) is built as the real driver builds it, except that the LLVM IR is
mutated in between: bitpipe-compile --emit=llvm, the mutant of
BITPIPE_MUTANT (mutants.py), llc, then the link with the runtime through
the same response file the driver uses. Any other --emit goes straight to
the real driver.

Environment: BITPIPE_REAL_COMPILE (the real bitpipe-compile),
BITPIPE_MUTANT (a name of mutants.MUTANTS), BITPIPE_RUNTIME_LINK (the
runtime's link response file), BITPIPE_LLC (LLVM 19's llc), BITPIPE_CXX
(the C++ driver that links). Each build appends "<output>: <mutant>
changed N places" to BITPIPE_MUTANT_LOG, or "<output>: BUILD FAILED" when
the mutated program could not be built (a fault of this tool, not a catch
by the test that asked for the build).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutants  # noqa: E402


def note(line):
    log = os.environ.get("BITPIPE_MUTANT_LOG")
    if log:
        with open(log, "a") as f:
            f.write(line + "\n")


def main(argv):
    real = os.environ["BITPIPE_REAL_COMPILE"]
    if any(a.startswith("--emit") for a in argv) or "-o" not in argv:
        return subprocess.call([real] + argv)
    out = argv[argv.index("-o") + 1]
    ll, obj = out + ".mutant.ll", out + ".mutant.o"
    rc = subprocess.call([real] + argv[:argv.index("-o")] +
                         argv[argv.index("-o") + 2:] +
                         ["--emit=llvm", "-o", ll])
    if rc:
        return rc
    with open(ll) as f:
        ir = f.read()
    name = os.environ["BITPIPE_MUTANT"]
    ir, changed = mutants.MUTANTS[name](ir, mutants.manifest_of(ir))
    with open(ll, "w") as f:
        f.write(ir)
    llc = os.environ.get("BITPIPE_LLC", "/usr/lib/llvm-19/bin/llc")
    cxx = os.environ.get("BITPIPE_CXX", "c++")
    if subprocess.call([llc, "-O2", "-filetype=obj", "-relocation-model=pic",
                        ll, "-o", obj]) or \
       subprocess.call([cxx, obj, "@" + os.environ["BITPIPE_RUNTIME_LINK"],
                        "-o", out]):
        note(f"{out}: BUILD FAILED")
        return 1
    note(f"{out}: {name} changed {changed} places")
    os.remove(obj)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
