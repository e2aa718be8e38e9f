"""Token files through the executable's --data: sizes a sample cannot come
from, tokens outside the vocabulary, the wrong --data-dtype, special files,
and byte-mutated token files judged by what they hold."""
import os
import struct

import mutations
from cases import Case
from fifo import FifoPeer
from fixtures import RUN_FLAGS, VOCAB, nonfinite_loss

KIND = "token files (--data)"


def expectation(data, seq_len):
    """A u16 token file is valid when every token is in the vocabulary and
    it holds one sample (seq_len + 1 tokens); an odd byte is "any" (a
    reader may ignore or refuse it)."""
    n = len(data) // 2
    tokens = struct.unpack("<%dH" % n, data[:2 * n])
    if n < seq_len + 1 or any(t >= VOCAB for t in tokens):
        return "invalid"
    return "any" if len(data) % 2 else "valid"


def cases(fx, rng, mutants):
    out_dir = fx.path("tokens")
    os.makedirs(out_dir, exist_ok=True)
    with open(fx.tokens, "rb") as f:
        good = f.read()
    result = []

    def case(name, data, expect, flags=(), special=None, fifo=False):
        path = os.path.join(out_dir, name + ".bin")
        # A FIFO fed the good tokens by a writer (a shell's <(...)).
        peer = FifoPeer(path, source=fx.tokens) if fifo else None

        def prepare():
            if peer:
                peer.start()
            elif special:
                if not os.path.exists(path):
                    special(path)
            else:
                with open(path, "wb") as f:
                    f.write(data)
        result.append(Case(KIND, name, [fx.exe1, "--data", path, "--steps", 1]
                           + list(flags) + RUN_FLAGS, expect, prepare=prepare,
                           check=nonfinite_loss, env=fx.env, timeout=30,
                           cleanup=peer.stop if peer else None))

    case("valid", good, "valid")
    case("empty", b"", "invalid")
    case("one-byte", b"\x01", "invalid")
    case("one-sample-short", good[:2 * fx.seq_len], "invalid")
    case("one-sample", good[:2 * (fx.seq_len + 1)], "valid")
    case("odd-length", good[:-1], "any")
    case("all-out-of-vocabulary", b"\xff\xff" * 4096, "invalid")
    case("one-out-of-vocabulary", good[:1000] + b"\x00\x01" + good[1002:],
         "invalid")
    case("last-out-of-vocabulary", good[:-2] + b"\xff\xff", "invalid")
    case("u32-of-u16-file", good, "invalid", flags=["--data-dtype", "u32"])
    case("u32-out-of-vocabulary", struct.pack("<4096I", *([1 << 31] * 4096)),
         "invalid", flags=["--data-dtype", "u32"])
    case("directory", None, "invalid", special=os.makedirs)
    case("fifo-with-writer", None, "any", fifo=True)
    case("missing", None, "invalid", special=lambda p: None)
    for i in range(mutants):
        data = mutations.mutate(rng, good, mutations.BYTE_MUTATIONS)
        case("mutant-%04d" % i, data, expectation(data, fx.seq_len))
    return result
