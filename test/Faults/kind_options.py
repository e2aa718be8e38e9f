"""Out-of-range pass options (bitpipe-opt) and bitpipe-compile flags, each
known-invalid (except where marked "any": a schedule with --split-backward
may support it or refuse it)."""
import os

from cases import Case

KIND_PASS = "pass options (bitpipe-opt)"
KIND_COMPILE = "flags (bitpipe-compile)"

HUGE = ["2147483648", "4611686018427387904", "9223372036854775808"]
SCHEDULES = ["gpipe", "1f1b", "interleaved-1f1b", "chimera", "bitpipe",
             "zb-h1"]


def pass_cases(fx):
    model, programs = fx.model, fx.programs
    pipe = "--bitpipe-pipeline=devices=2 schedule=1f1b"
    out = []

    def case(name, source, option, expect="invalid"):
        out.append((name, source, option, expect))

    for v in ["0", "-1", "2147483647"] + HUGE + ["nan"]:
        case("pipeline-devices=" + v, model,
             "--bitpipe-pipeline=devices=%s schedule=1f1b" % v)
    for opt, values in [("microbatches", ["0", "-1", "2147483647"] + HUGE),
                        ("dp", ["0", "-1", "2147483647"] + HUGE),
                        ("bucket-mb", ["-1", "0", "nan", "inf", "-inf",
                                       "1e400"])]:
        for v in values:
            case("pipeline-%s=%s" % (opt, v), model,
                 pipe + " %s=%s" % (opt, v))
    for v in ["-1", "0", "2147483647"]:
        case("pipeline-chunks-per-device=" + v, model,
             "--bitpipe-pipeline=devices=2 schedule=interleaved-1f1b "
             "chunks-per-device=" + v)
    case("pipeline-schedule=unknown", model,
         "--bitpipe-pipeline=devices=2 schedule=nope")
    for s in SCHEDULES:
        case("pipeline-split-backward-" + s, model,
             "--bitpipe-pipeline=devices=2 schedule=%s split-backward" % s,
             "any")
    for v in ["0", "-1", "2147483647"]:
        case("partition-chunks=" + v, model,
             "--bitpipe-annotate-cost --bitpipe-partition=chunks=" + v)
    for v in ["-1", "0,0", "99"]:
        case("partition-boundaries=" + v, model,
             "--bitpipe-annotate-cost --bitpipe-partition=boundaries=" + v)
    for opt, values in [("f-cost", ["inf", "nan", "-1"]),
                        ("b-cost", ["inf", "-1"]),
                        ("w-cost", ["nan"]),
                        ("ar-latency", ["-1", "inf"]),
                        ("p2p-latency", ["-1", "nan"])]:
        for v in values:
            case("simulate-%s=%s" % (opt, v), programs,
                 "--bitpipe-simulate=costs=unit %s=%s" % (opt, v))
    for v in ["-1", "nan", "inf"]:
        case("simulate-tflops=" + v, programs,
             "--bitpipe-simulate=costs=ir tflops=" + v)
    case("simulate-costs=unknown", programs, "--bitpipe-simulate=costs=nope")
    # int64 thresholds: any value from the minimum up is a valid request
    # (a huge one keeps every program straight); 2^63 does not parse.
    for opt, values in [("min-repetitions", ["1", "0", "-1"]),
                        ("min-ops-saved", ["0", "-5"])]:
        for v in values + ["9223372036854775808"]:
            case("reroll-%s=%s" % (opt, v), programs,
                 "--bitpipe-reroll=%s=%s" % (opt, v))
        for v in ["2147483648", "4611686018427387904"]:
            case("reroll-%s=%s" % (opt, v), programs,
                 "--bitpipe-reroll=%s=%s" % (opt, v), "valid")
    return out


def compile_cases():
    out = []
    for flag, values in [("--devices", ["0", "-1", "2147483647"] + HUGE),
                         ("--dp", ["0", "-1", "2147483647"] + HUGE),
                         ("--microbatches", ["0", "-1", "2147483647"] + HUGE),
                         ("--chunks-per-device", ["-1", "0"]),
                         ("--max-in-flight", ["-1", "0", "2147483647"]),
                         ("--bucket-mb", ["-1", "nan", "inf", "1e400"]),
                         ("-O", ["9", "-1"]),
                         ("--schedule", ["nope", ""]),
                         ("--precision", ["bf16", "fp8"]),
                         ("--emit", ["nope"]),
                         ("--target", ["nope"])]:
        for v in values:
            extra = {"--chunks-per-device": ["--schedule", "interleaved-1f1b"],
                     "--max-in-flight": ["--schedule", "1f1b"]}.get(flag, [])
            out.append(("%s=%s" % (flag.lstrip("-"), v), [flag + "=" + v] +
                        extra, "invalid"))
    for s in SCHEDULES:
        out.append(("split-backward-" + s, ["--schedule=" + s,
                                            "--split-backward"], "any"))
    out.append(("unknown-flag", ["--no-such-flag"], "invalid"))
    out.append(("two-inputs", ["extra.json"], "invalid"))
    return out


def cases(fx, rng, mutants):
    del rng, mutants  # named cases only: each flag and value is listed
    out_dir = fx.path("options")
    os.makedirs(out_dir, exist_ok=True)
    result = []
    for name, source, option, expect in pass_cases(fx):
        argv = [fx.tool("bitpipe-opt"), source] + option.split(" --")[0:1]
        rest = option.split(" --")[1:]
        argv += ["--" + r for r in rest]
        argv += ["-o", os.path.join(out_dir, name + ".out")]
        result.append(Case(KIND_PASS, name, argv, expect))
    base = ["--devices=2", "--schedule=1f1b", "--emit=mlir"]
    for name, flags, expect in compile_cases():
        # The last --schedule wins: the case's own comes after the base's.
        argv = ([fx.tool("bitpipe-compile"), fx.config] + base + flags +
                ["-o", os.path.join(out_dir, "compile-" + name + ".mlir")])
        result.append(Case(KIND_COMPILE, name, argv, expect))
    result.append(Case(KIND_COMPILE, "valid", [
        fx.tool("bitpipe-compile"), fx.config] + base +
        ["-o", os.path.join(out_dir, "compile-valid.mlir")], "valid"))
    return result
