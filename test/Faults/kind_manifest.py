"""Manifests: the JSON a compiled executable carries (docs/runtime-abi.md),
damaged inside a copy of exe1 and run. The runtime reads it at start-up
(runtime/lib/exec/Manifest.h) and must refuse what does not describe the
compiled program, before the first step. The bytes are edited in place,
padded with JSON's spaces to their length, since the executable records
the manifest's size."""
import json
import os
import stat

import mutations
from cases import Case
from fixtures import RUN_FLAGS, losses, nonfinite_loss

KIND = "manifests (executable)"


def locate(exe):
    """(start, end) of the manifest in the executable's bytes: the JSON
    object that starts with "version" and ends at the NUL after it."""
    start = exe.find(b'{"version":')
    end = exe.find(b"\x00", start)
    if start < 0 or end < 0 or exe.find(b'{"version":', end) >= 0:
        raise SystemExit("fault suite: no single manifest found in exe1")
    return start, end


def fit(text, size):
    """`text` as `size` bytes (spaces after it), or None when longer."""
    if len(text) > size:
        return None
    return text + b" " * (size - len(text))


def named(manifest):
    """(name, manifest bytes of the same length): one field at a time."""
    doc = json.loads(manifest)
    out = []

    def edit(name, fn):
        d = json.loads(manifest)
        fn(d)
        text = fit(json.dumps(d, separators=(",", ":")).encode(),
                   len(manifest))
        if text is not None:
            out.append((name, text))

    def set_in(path, value):
        def fn(d):
            node = d
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
        return fn

    edit("version-999", set_in(["version"], 999))
    edit("target-tpu", set_in(["target", "name"], "tpu"))
    edit("precision-fp8", set_in(["target", "precision"], "fp8"))
    edit("seq-len-0", set_in(["model", "seq_len"], 0))
    edit("seq-len-other", set_in(["model", "seq_len"],
                                 doc["model"]["seq_len"] * 2))
    edit("microbatch-size-other", set_in(["model", "microbatch_size"],
                                         doc["model"]["microbatch_size"] + 1))
    edit("vocab-negative", set_in(["model", "vocab"], -1))
    edit("microbatches-0", set_in(["schedule", "microbatches"], 0))
    edit("devices-2", set_in(["schedule", "devices"], 2))
    edit("schedule-name-number", set_in(["schedule", "name"], 3))
    edit("family-unknown", set_in(["model", "family"], "rnn"))
    edit("model-missing", lambda d: d.pop("model"))
    vocab = b'"vocab":%d' % doc["model"]["vocab"]
    heads = b'"heads":%d' % doc["model"]["heads"]
    out += [
        ("vocab-1e400", fit(manifest.replace(vocab, b'"vocab":1e400', 1),
                            len(manifest))),
        # "heads" renamed "vocab": the model object names vocab twice.
        ("duplicate-key", manifest.replace(heads, heads.replace(b"heads",
                                                                b"vocab"), 1)),
        ("not-json", fit(b"{", len(manifest))),
        ("empty", fit(b"", len(manifest))),
    ]
    return [(n, t) for n, t in out if t is not None]


def cases(fx, rng, mutants):
    out_dir = fx.path("manifests")
    os.makedirs(out_dir, exist_ok=True)
    with open(fx.exe1, "rb") as f:
        exe = f.read()
    start, end = locate(exe)
    manifest = exe[start:end]
    good_losses = None
    result = []

    def case(name, text, expect, same_run=True):
        path = os.path.join(out_dir, name)

        def prepare():
            with open(path, "wb") as f:
                f.write(exe[:start] + text + exe[end:])
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

        def check(o):
            damage = nonfinite_loss(o)
            if damage or o.status != "accepted" or not same_run:
                return damage
            got = losses(o.output)
            if got != good_losses:
                return ("ran with the damaged manifest to losses %s, not "
                        "the undamaged executable's %s" % (got, good_losses))
            return None
        result.append(Case(KIND, name, [path, "--data", fx.tokens,
                                        "--steps", 1] + RUN_FLAGS,
                           expect, prepare=prepare, check=check, env=fx.env,
                           timeout=30))

    good_losses = losses(fx._run([fx.exe1, "--data", fx.tokens, "--steps", 1]
                                 + RUN_FLAGS))
    case("undamaged", manifest, "valid")
    for name, text in named(manifest):
        case(name, text, "invalid")
    for i in range(mutants):
        # Same length: the executable records the manifest's size.
        data = mutations.mutate(rng, manifest,
                                [mutations.flip_bit, mutations.set_byte,
                                 mutations.replace_number])
        if len(data) != len(manifest):
            data = (data + b" " * len(manifest))[:len(manifest)]
        # A mutant may describe another valid run (an initialiser's std of
        # 0, a parameter without weight decay): only a crash, a hang or a
        # non-finite loss is wrong there.
        case("mutant-%04d" % i, data, "any", same_run=False)
    return result
