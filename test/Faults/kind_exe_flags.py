"""Out-of-range flags of a compiled executable, and values of its
BITPIPE_COMM_TIMEOUT environment variable: each known-invalid, except
"--lr 1e30", which may train (a non-finite loss must then stop it) and
"--steps 0" (nothing to do)."""

from cases import Case
from fixtures import RUN_FLAGS, nonfinite_loss

KIND = "executable flags"

CASES = [
    ("lr=1e30", ["--lr", "1e30", "--steps", "3"], "any"),
    ("lr=-1", ["--lr", "-1"], "invalid"),
    ("lr=nan", ["--lr", "nan"], "invalid"),
    ("lr=inf", ["--lr", "inf"], "invalid"),
    ("lr=abc", ["--lr", "abc"], "invalid"),
    ("steps=-1", ["--steps", "-1"], "invalid"),
    ("steps=0", ["--steps", "0"], "any"),
    ("steps=2^63", ["--steps", "9223372036854775808"], "invalid"),
    ("steps=1e3", ["--steps", "1e3"], "invalid"),
    ("weight-decay=nan", ["--weight-decay", "nan"], "invalid"),
    ("weight-decay=-1", ["--weight-decay", "-1"], "invalid"),
    ("max-grad-norm=-1", ["--max-grad-norm", "-1"], "invalid"),
    ("max-grad-norm=nan", ["--max-grad-norm", "nan"], "invalid"),
    ("seed=-1", ["--seed", "-1"], "invalid"),
    ("seed=2^64", ["--seed", "18446744073709551616"], "invalid"),
    ("timeout=0", ["--timeout", "0"], "invalid"),
    ("timeout=-1", ["--timeout", "-1"], "invalid"),
    ("timeout=nan", ["--timeout", "nan"], "invalid"),
    ("log-interval=0", ["--log-interval", "0"], "invalid"),
    ("save-every=-1", ["--save-every", "-1"], "invalid"),
    ("data-dtype=u8", ["--data-dtype", "u8"], "invalid"),
    ("sampling=unknown", ["--sampling", "nope"], "invalid"),
    ("unknown-flag", ["--no-such-flag"], "invalid"),
    ("missing-value", ["--lr"], "invalid"),
    ("no-data", ["--data"], "invalid"),
    ("timeout=1e7", ["--timeout", "1e7"], "invalid"),
]

# BITPIPE_COMM_TIMEOUT, the deadline when --timeout is not given: a value
# the communicator cannot use is refused, not replaced by its default.
ENV_CASES = [
    ("BITPIPE_COMM_TIMEOUT=abc", "abc", "invalid"),
    ("BITPIPE_COMM_TIMEOUT=0", "0", "invalid"),
    ("BITPIPE_COMM_TIMEOUT=-5", "-5", "invalid"),
    ("BITPIPE_COMM_TIMEOUT=nan", "nan", "invalid"),
    ("BITPIPE_COMM_TIMEOUT=1e7", "1e7", "invalid"),
    ("BITPIPE_COMM_TIMEOUT=30s", "30s", "invalid"),
    ("BITPIPE_COMM_TIMEOUT=30", "30", "valid"),
]


def base_flags(fx):
    """The flags of a good run, as {flag: value}."""
    flags = {"--data": fx.tokens, "--steps": "1"}
    flags.update(zip(RUN_FLAGS[::2], RUN_FLAGS[1::2]))
    return flags


def cases(fx, rng, mutants):
    del rng, mutants
    result = []
    for name, flags, expect in CASES:
        # The case's flag replaces the good run's (a flag given twice is a
        # fault of its own) and comes last, so that a missing value is the
        # last word.
        base = {k: v for k, v in base_flags(fx).items()
                if k not in flags[::2]}
        argv = [fx.exe1] + [x for kv in base.items() for x in kv] + flags
        result.append(Case(KIND, name, argv, expect, check=nonfinite_loss,
                           env=fx.env, timeout=30))
    for name, value, expect in ENV_CASES:
        base = {k: v for k, v in base_flags(fx).items() if k != "--timeout"}
        argv = [fx.exe1] + [x for kv in base.items() for x in kv]
        result.append(Case(KIND, name, argv, expect, check=nonfinite_loss,
                           env=dict(fx.env, BITPIPE_COMM_TIMEOUT=value),
                           timeout=30))
    return result
