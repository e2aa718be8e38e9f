"""MLIR bytecode through bitpipe-opt: the tiny model and its programs as
bytecode (--emit-bytecode), byte-mutated and damaged in known ways. The
tools read bytecode in a child process (tools/common/ToolInput.h): MLIR
19's reader does not survive every damaged file, the tools must."""
import os

import mutations
from cases import Case, write_when_run
from fixtures import ROOT

KIND = "IR bytecode (bitpipe-opt)"
PIPELINE = "--bitpipe-pipeline=devices=2 schedule=1f1b"


def named(model):
    """(name, bytes): files that are not bytecode a reader can take."""
    magic = model[:4]
    return [
        ("magic-only", magic),
        ("truncated-half", model[:len(model) // 2]),
        ("truncated-last-byte", model[:-1]),
        ("version-63", magic + b"\x7f" + model[5:]),
        ("producer-unterminated", magic + model[4:5] + b"A" * 64),
        ("zeros-after-magic", magic + b"\x00" * (len(model) - 4)),
        ("ones-after-magic", magic + b"\xff" * (len(model) - 4)),
    ]


def cases(fx, rng, mutants):
    out_dir = fx.path("bytecode")
    os.makedirs(out_dir, exist_ok=True)
    with open(fx.model_bytecode, "rb") as f:
        model = f.read()
    with open(fx.programs_bytecode, "rb") as f:
        programs = f.read()
    opt = fx.tool("bitpipe-opt")
    result = []

    def case(name, data, expect, argv):
        path = os.path.join(out_dir, name + ".mlirbc")
        result.append(Case(KIND, name, [opt, path] + argv +
                           ["-o", path + ".out"], expect,
                           prepare=write_when_run(path, data)))

    case("model", model, "valid", [PIPELINE])
    case("programs", programs, "valid", ["--bitpipe-verify"])
    for name, data in named(model):
        case(name, data, "invalid", [PIPELINE])
    # Files on which MLIR 19's reader itself fails (a count of 2^37
    # elements; a value index past its table): test/Tools/bytecode-input.test.
    for name in ("damaged-huge-count", "damaged-value-index"):
        with open(os.path.join(ROOT, "test", "Tools", "Inputs",
                               name + ".mlirbc"), "rb") as f:
            case(name, f.read(), "invalid", ["--bitpipe-verify"])
    for i in range(mutants):
        if i % 2:
            case("model-mutant-%04d" % i,
                 mutations.mutate(rng, model, mutations.BYTE_MUTATIONS),
                 "any", [PIPELINE])
        else:
            case("programs-mutant-%04d" % i,
                 mutations.mutate(rng, programs, mutations.BYTE_MUTATIONS),
                 "any", ["--bitpipe-verify"])
    return result
