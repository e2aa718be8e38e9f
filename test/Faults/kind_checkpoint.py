"""Checkpoints through the executable's --load: one field damaged at a time
(non-finite weights and optimizer moments, impossible steps, unknown
formats, truncations, shapes), byte-mutated checkpoints, which must either
be refused or train exactly as the undamaged one (the same losses and the
same saved checkpoint, byte for byte), and a few on two ranks under
mpirun."""
import copy
import os
import shutil

import mutations
from cases import Case
from fifo import FifoPeer
from fixtures import RUN_FLAGS, losses, nonfinite_loss
from safetensors_file import Safetensors

KIND = "checkpoints (--load)"


def damaged(good):
    """(name, bytes or None for a special file, expect)."""
    st = Safetensors.read(good)
    params = [t for t in st.tensors() if not t.startswith("optim.")]
    out = []

    def edit(name, fn, expect="invalid"):
        # With the checksums recomputed after the edit: otherwise they would
        # refuse every edit before the check of the edited value could.
        s = Safetensors(copy.deepcopy(st.header), st.data)
        fn(s)
        s.reseal()
        out.append((name, s.encode(), expect))

    def meta(key, value):
        def fn(s):
            if value is None:
                s.header["__metadata__"].pop(key, None)
            else:
                s.header["__metadata__"][key] = value
        return fn

    first = params[0]
    edit("nan-weight", lambda s: s.set_f32(first, 0, float("nan")))
    edit("inf-weight", lambda s: s.set_f32(params[-1], 1, float("inf")))
    edit("nan-adam-m", lambda s: s.set_f32("optim.m." + first, 0,
                                            float("nan")))
    edit("negative-adam-v", lambda s: s.set_f32("optim.v." + first, 0, -1.0))
    edit("inf-adam-v", lambda s: s.set_f32("optim.v." + first, 0,
                                            float("inf")))
    for v in ["9223372036854775808", "18446744073709551615", "-1", "1e3",
              ""]:
        edit("step=" + v, meta("step", v))
    edit("seed=-1", meta("seed", "-1"))
    edit("format-unknown", meta("format", "bitpipe-v999"))
    edit("format-missing", meta("format", None))

    def reshape(s):
        shape = s.header[first]["shape"]
        s.header[first]["shape"] = list(reversed(shape))
        if shape == list(reversed(shape)):
            s.header[first]["shape"] = [shape[0] * shape[-1]]
    edit("shape-changed", reshape)
    edit("tensor-missing", lambda s: s.header.pop(params[-1]))
    edit("dtype-f16", lambda s: s.header[first].update(dtype="F16"))
    raw = st.encode()
    header_end = len(raw) - len(st.data)
    out += [("truncated-header", raw[:header_end // 2], "invalid"),
            ("truncated-data", raw[:-100], "invalid"),
            ("empty", b"", "invalid"),
            ("header-length-2^64-1", b"\xff" * 8 + raw[8:], "invalid"),
            ("not-json-header", raw[:8] + b"x" * (header_end - 8) +
             raw[header_end:], "invalid")]
    return out


def huge_header(good):
    """200,000 extra empty tensors: parsing must stay linear."""
    st = Safetensors.read(good)
    for i in range(200000):
        st.header["extra.%d" % i] = {"dtype": "F32", "shape": [0],
                                     "data_offsets": [0, 0]}
    return st.encode()


def cases(fx, rng, mutants, full=False):
    """The named cases, the 200,000-entry header with `full`, and
    `mutants` checkpoints with one byte changed."""
    out_dir = fx.path("checkpoints")
    os.makedirs(out_dir, exist_ok=True)
    good = fx.checkpoint
    with open(good, "rb") as f:
        good_bytes = f.read()
    result = []

    def case(name, data, expect, exe=None, np=1, ckpt=good, same_result=False,
             special=None, fifo=False):
        d = os.path.join(out_dir, name)
        src = os.path.join(d, "load.safetensors")
        keep = os.path.join(d, "keep.safetensors")
        exe = exe or fx.exe1
        # A FIFO fed the good checkpoint by a writer (a shell's <(...)).
        peer = FifoPeer(src, source=ckpt) if fifo else None

        def prepare():
            os.makedirs(d, exist_ok=True)
            if peer:
                peer.start()
            elif special:
                special(src)
            else:
                with open(src, "wb") as f:
                    f.write(data)
            shutil.copy(ckpt, keep)

        def check(o):
            why = nonfinite_loss(o)
            if why:
                return why
            with open(keep, "rb") as f, open(ckpt, "rb") as g:
                if o.status != "accepted" and f.read() != g.read():
                    return "a failed run replaced the --save checkpoint"
            if same_result and o.status == "accepted":
                if losses(o.output) != fx.resumed_losses:
                    return ("loaded a damaged checkpoint and trained to "
                            "other losses (%s, undamaged: %s)" %
                            (" ".join(losses(o.output)),
                             " ".join(fx.resumed_losses)))
                with open(keep, "rb") as f, open(fx.resumed, "rb") as g:
                    if f.read() != g.read():
                        return ("loaded a damaged checkpoint and saved other "
                                "weights than the undamaged one trains to")
            return None
        argv = [exe, "--data", fx.tokens, "--steps", 2, "--load", src,
                "--save", keep] + RUN_FLAGS
        if np > 1:
            argv = fx.mpirun(np) + argv
        result.append(Case(KIND, name, argv, expect, prepare=prepare,
                           check=check, env=fx.env, timeout=30,
                           cleanup=peer.stop if peer else None))

    for name, data, expect in damaged(good):
        case(name, data, expect)
    case("directory", None, "invalid", special=os.makedirs)
    case("fifo-with-writer", None, "any", fifo=True, same_result=True)
    case("missing", None, "invalid", special=lambda p: None)
    if full:
        case("header-200000-entries", huge_header(good), "any")
    # Two ranks: each rank loads its part, and all must agree to stop.
    for name, data, expect in damaged(fx.checkpoint2):
        if name not in ("nan-weight", "truncated-data"):
            continue
        case("2-ranks-" + name, data, expect, exe=fx.exe2, np=2,
             ckpt=fx.checkpoint2)
    for i in range(mutants):
        data = mutations.mutate(rng, good_bytes, [mutations.flip_bit,
                                                  mutations.set_byte], 1)
        case("mutant-%04d" % i, data, "any", same_result=True)
    return result
