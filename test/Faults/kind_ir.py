"""IR through bitpipe-opt: mutants of a tiny model's IR through the whole
pass pipeline, mutants of its per-rank programs (straight, and rolled into
bitpipe.repeat) through bitpipe-verify,
and the same programs through bitpipe-lower-to-runtime, which must not
lower what bitpipe-verify rejects (it runs the same checks first)."""
import os

import mutations
import outcome
from cases import Case, write_when_run

KIND_PIPELINE = "IR (bitpipe-opt passes)"
KIND_LOWERING = "IR lowering (lower-to-runtime)"
PIPELINE = "--bitpipe-pipeline=devices=2 schedule=1f1b"


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def named(model, full):
    """(name, IR): sizes no machine holds, text the parser cannot take.
    With `full`, also 120,000 dimensions in one tensor type, which MLIR's
    parser takes quadratic time over (fuzz/regressions/README.md)."""
    huge = b"4611686018427387904"
    cases = [
        ("dims-2^62", model.replace(b"x16x", b"x" + huge + b"x")),
        ("dims-2^63", model.replace(b"x16x", b"x9223372036854775808x")),
        ("nested-regions", b"module {" * 20000 + b"}" * 20000),
        ("empty", b""),
        ("not-ir", b"\x00\xff\xfe garbage"),
    ]
    if full:
        cases.append(("tensor-120000-dimensions",
                      b"func.func private @f(tensor<2x" + b"1x" * 120000 +
                      b"f32>)\n"))
    return cases


def cases(fx, rng, mutants, full=False):
    out_dir = fx.path("ir")
    os.makedirs(out_dir, exist_ok=True)
    model, programs = _read(fx.model), _read(fx.programs)
    rolled = _read(fx.rolled_programs)
    opt = fx.tool("bitpipe-opt")

    def write(name, data):
        path = os.path.join(out_dir, name + ".mlir")
        return path, write_when_run(path, data)

    result = []

    def pipeline(name, data, expect):
        path, prepare = write(name, data)
        result.append(Case(KIND_PIPELINE, name, [opt, path, PIPELINE, "-o",
                                                 path + ".out"],
                           expect, prepare=prepare))

    def verify(name, data, expect):
        path, prepare = write(name, data)
        result.append(Case(KIND_PIPELINE, name, [opt, path, "--bitpipe-verify",
                                                 "-o", path + ".out"],
                           expect, prepare=prepare))

    def lowering(name, data):
        # Its own file: cases run in parallel, and a file rewritten while
        # another tool maps it would crash that tool (SIGBUS).
        path, prepare = write("lowering-" + name, data)

        def check(o):
            if o.status != "accepted":
                return None
            v = outcome.run([opt, path, "--bitpipe-verify", "-o",
                             path + ".verified"], 60)
            if v.status == "clear":
                return ("lowered a program that bitpipe-verify rejects: " +
                        v.excerpt(1))
            return None
        result.append(Case(KIND_LOWERING, name,
                           [opt, path, "--bitpipe-lower-to-runtime", "-o",
                            path + ".out"], "any", prepare=prepare,
                           check=check))

    pipeline("model", model, "valid")
    verify("programs", programs, "valid")
    lowering("programs", programs)
    verify("rolled-programs", rolled, "valid")
    lowering("rolled-programs", rolled)
    for name, data in named(model, full):
        pipeline(name, data, "invalid")
    for i in range(mutants):
        if i % 2:
            pipeline("model-mutant-%04d" % i,
                     mutations.mutate(rng, model, mutations.TEXT_MUTATIONS),
                     "any")
        else:
            # Every other programs mutant is of the rolled ones: repeats,
            # steps and carried values mutated too.
            source = rolled if i % 4 == 2 else programs
            verify("programs-mutant-%04d" % i,
                   mutations.mutate(rng, source, mutations.LINE_MUTATIONS +
                                    mutations.TEXT_MUTATIONS), "any")
        lowering("mutant-%04d" % i,
                 mutations.mutate(rng, rolled if i % 3 == 1 else programs,
                                  mutations.LINE_MUTATIONS, 1))
    return result
