"""A fault case and its verdict.

A case is one run of one tool on one hostile input: its kind (a row of the
table), a name, the command, what the input is known to be, and an optional
check of what the run left behind. `expect` is

  "invalid"  known-invalid: the tool must refuse it with a clear error;
  "valid"    known-valid: the tool must accept it;
  "any"      a mutant nobody has classified: either is fine.

The verdict is the outcome's class (outcome.py), except "wrong" for an
invalid input accepted, a valid one refused, a failure without a message,
or a check that finds damage (an output replaced, a non-finite loss
printed, a result that differs from the undamaged input's).
"""
import outcome as outcome_mod

VERDICTS = ("accepted", "clear", "crash", "hang", "wrong")


class Case:
    def __init__(self, kind, name, argv, expect, timeout=20, prepare=None,
                 check=None, env=None, cleanup=None):
        self.kind = kind
        self.name = name
        self.argv = argv          # a list, or a callable returning one
        self.expect = expect
        self.timeout = timeout
        self.prepare = prepare    # () -> None: writes the case's files
        self.check = check        # (Outcome) -> reason str, or None if fine
        self.env = env
        self.cleanup = cleanup    # () -> None: after the run, before check
        self.verdict = None
        self.reason = ""
        self.outcome = None

    def run(self):
        if self.prepare:
            self.prepare()
        argv = self.argv() if callable(self.argv) else self.argv
        try:
            o = outcome_mod.run([str(a) for a in argv], self.timeout,
                                env=self.env)
        finally:
            if self.cleanup:
                self.cleanup()
        self.outcome = o
        self.verdict, self.reason = judge(self, o)
        return self


def write_when_run(path, data):
    """A case's `prepare` that writes `data` to `path` when the case runs:
    each case has its own file, since cases run in parallel."""
    def prepare():
        with open(path, "wb") as f:
            f.write(data)
    return prepare


def judge(case, o):
    if o.status in ("crash", "hang"):
        return o.status, o.reason
    if o.status == "silent":
        return "wrong", o.reason
    damage = case.check(o) if case.check else None
    if damage:
        return "wrong", damage
    if o.status == "clear":
        if case.expect == "valid":
            return "wrong", "refused a valid input"
        return "clear", ""
    if case.expect == "invalid":
        return "wrong", "accepted a known-invalid input (exit 0)"
    return "accepted", ""
