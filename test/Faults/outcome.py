"""How one run of a tool ended, in the fault suite's four classes.

clear error  non-zero exit, a message, no crash marker;
crash        a signal, or a crash marker in the output (an LLVM stack dump,
             an uncaught exception, an assertion, a sanitizer report, a
             rank that mpirun saw die of a signal);
hang         still running at the case's time limit;
accepted     exit 0: right for valid inputs, "wrong" for known-invalid ones.

A case turns the outcome into a verdict (cases.py): clear error, crash,
hang, wrong or ok. See docs/robustness.md.
"""
import os
import signal
import subprocess
import time

CRASH_MARKERS = (
    "Stack dump", "PLEASE submit a bug report", "terminate called",
    "Assertion", "LLVM ERROR", "Segmentation fault", "core dumped",
    "AddressSanitizer", "exited on signal", "std::bad_alloc",
    "Failed to infer result type",
)


class Outcome:
    def __init__(self, status, returncode, output, seconds):
        self.status = status          # "clear", "crash", "hang", "accepted"
        self.returncode = returncode  # None for a hang
        self.output = output          # stdout and stderr, together
        self.seconds = seconds
        self.reason = ""              # why, for crash and silent failures

    def excerpt(self, lines=8):
        text = self.output.strip().splitlines()
        return "\n".join(text[-lines:])


def run(argv, timeout, env=None, cwd=None, stdin=None):
    """Runs argv in its own process group (so that a hang's children die
    with it) and classifies how it ended."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, cwd=cwd,
                            stdin=stdin if stdin is not None
                            else subprocess.DEVNULL,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        o = Outcome("hang", None, out.decode("utf-8", "replace"),
                    time.monotonic() - start)
        o.reason = "still running after %g s" % timeout
        return o
    text = out.decode("utf-8", "replace")
    o = Outcome("accepted", proc.returncode, text, time.monotonic() - start)
    marker = next((m for m in CRASH_MARKERS if m in text), None)
    if proc.returncode < 0:
        o.status = "crash"
        o.reason = "killed by signal %d" % -proc.returncode
    elif marker:
        o.status = "crash"
        o.reason = "output shows %r" % marker
    elif proc.returncode != 0:
        o.status = "clear"
        if not text.strip():
            # Non-zero and silent: not a clear error (the user learns
            # nothing); the case counts it as wrong.
            o.status = "silent"
            o.reason = "exit %d without a message" % proc.returncode
    return o
