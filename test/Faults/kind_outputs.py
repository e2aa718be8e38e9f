"""Where the tools write: -o of bitpipe-import, bitpipe-opt and
bitpipe-compile, and the executable's --save, --trace, --metrics and
--dump-rank-params, each pointed at a directory, a symlink, a FIFO, a
character device, a path whose parent is missing, and a good file that a
failing run must leave alone (docs/files.md).

The device is a private node made with mknod (1, 3: what /dev/null is) in
the work directory, never /dev/null itself: a tool that replaces its
output would replace the machine's /dev/null. Without mknod (no
CAP_MKNOD) the device cases are left out.
"""
import os
import stat

from cases import Case
from fifo import FifoPeer
from fixtures import RUN_FLAGS

KIND = "output targets"
CONTENT = b"good output that must survive\n"


def tools(fx, bad_input):
    """(name, argv builder taking the target and whether the run must
    fail for a reason of its own, is_training_run)."""
    def importer(target, failing):
        config = bad_input["config"] if failing else fx.config
        return [fx.tool("bitpipe-import"), "--config", config, "-o", target]

    def opt(target, failing):
        source = bad_input["ir"] if failing else fx.model
        return [fx.tool("bitpipe-opt"), source, "-o", target]

    def compile_mlir(target, failing):
        return [fx.tool("bitpipe-compile"),
                bad_input["config"] if failing else fx.config,
                "--devices=2", "--schedule=1f1b", "--emit=mlir",
                "-o", target]

    def compile_exe(target, failing):
        return [fx.tool("bitpipe-compile"),
                bad_input["config"] if failing else fx.config,
                "--devices=1", "--schedule=gpipe", "--microbatches=2",
                "-o", target]

    def exe(flag):
        def build(target, failing):
            data = bad_input["tokens"] if failing else fx.tokens
            return ([fx.exe1, "--data", data, "--steps", 1] + RUN_FLAGS +
                    [flag, target])
        return build

    return [("bitpipe-import -o", importer, False),
            ("bitpipe-opt -o", opt, False),
            ("bitpipe-compile --emit=mlir -o", compile_mlir, False),
            ("bitpipe-compile -o", compile_exe, False),
            ("--save", exe("--save"), True),
            ("--trace", exe("--trace"), True),
            ("--metrics", exe("--metrics"), True)]


def can_mknod(work):
    probe = os.path.join(work, "mknod-probe")
    try:
        os.mknod(probe, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        return False
    os.remove(probe)
    return True


def checked_before_training(o):
    """A training run's output targets are checked before the first step."""
    if o.status != "accepted" and any(l.startswith("step ")
                                      for l in o.output.splitlines()):
        return "refused its output target only after training"
    return None


def cases(fx, rng, mutants):
    del rng, mutants
    out_dir = fx.path("outputs")
    os.makedirs(out_dir, exist_ok=True)
    bad = {"config": os.path.join(out_dir, "bad.json"),
           "ir": os.path.join(out_dir, "bad.mlir"),
           "tokens": os.path.join(out_dir, "missing-tokens.bin")}
    with open(bad["config"], "w") as f:
        f.write('{"layers": -1}')
    with open(bad["ir"], "w") as f:
        f.write("module { nn.nope }")
    mknod = can_mknod(out_dir)
    result = []

    for tool_name, build, training in tools(fx, bad):
        slug = "".join(c if c.isalnum() else "-" for c in tool_name)
        d = os.path.join(out_dir, slug.strip("-"))

        def add(variant, expect, prepare, check, target, failing=False,
                d=d, build=build, tool_name=tool_name, training=training,
                cleanup=None):
            def full_check(o):
                why = check(o)
                if not why and training:
                    why = checked_before_training(o)
                return why

            def full_prepare():
                os.makedirs(d, exist_ok=True)
                prepare()
            result.append(Case(KIND, "%s %s" % (tool_name, variant),
                               build(target, failing), expect,
                               prepare=full_prepare, check=full_check,
                               env=fx.env, timeout=30, cleanup=cleanup))

        # A directory: refused, and still a directory.
        target = os.path.join(d, "a-directory")
        add("directory", "invalid",
            lambda t=target: os.makedirs(t, exist_ok=True),
            lambda o, t=target: None if os.path.isdir(t)
            else "replaced a directory", target)

        # A symlink to a good file: never replaced by a regular file, and
        # the file it points to is not damaged by a refusal.
        link, pointee = os.path.join(d, "a-symlink"), os.path.join(d, "pointee")

        def make_link(link=link, pointee=pointee):
            with open(pointee, "wb") as f:
                f.write(CONTENT)
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(pointee, link)

        def link_intact(o, link=link):
            if not os.path.islink(link):
                return "replaced a symlink with a regular file"
            return None
        add("symlink", "any", make_link, link_intact, link)

        # A FIFO with a reader (a shell's >(...)): written into as a stream
        # or refused, never replaced and never a hang.
        fifo = os.path.join(d, "a-fifo")
        peer = FifoPeer(fifo)
        add("fifo", "any", peer.start,
            lambda o, f=fifo: None if stat.S_ISFIFO(os.lstat(f).st_mode)
            else "replaced a FIFO", fifo, cleanup=peer.stop)

        # A character device: written to or refused, never replaced.
        if mknod:
            dev = os.path.join(d, "a-device")

            def make_dev(dev=dev):
                if not os.path.exists(dev):
                    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            add("device", "any", make_dev,
                lambda o, dev=dev: None if stat.S_ISCHR(os.lstat(dev).st_mode)
                else "replaced a device node with a regular file", dev)

        # A missing parent directory: refused.
        add("missing-parent", "invalid", lambda: None, lambda o: None,
            os.path.join(d, "no-such-dir", "out"))

        # A good file and a run that fails for another reason: untouched.
        kept = os.path.join(d, "kept")

        def make_kept(kept=kept):
            with open(kept, "wb") as f:
                f.write(CONTENT)

        def kept_intact(o, kept=kept):
            try:
                with open(kept, "rb") as f:
                    same = f.read() == CONTENT
            except OSError:
                same = False
            return None if same else "a failed run removed or changed " \
                "the existing output"
        add("kept-on-failure", "invalid", make_kept, kept_intact, kept,
            failing=True)

    # --dump-rank-params names a directory: a regular file or a FIFO there
    # is refused before training.
    d = os.path.join(out_dir, "dump-rank-params")
    for variant, make in [("regular-file", lambda p: open(p, "wb").close()),
                          ("fifo", os.mkfifo)]:
        target = os.path.join(d, "a-" + variant)

        def prepare(target=target, make=make):
            os.makedirs(d, exist_ok=True)
            if not os.path.lexists(target):
                make(target)
        result.append(Case(
            KIND, "--dump-rank-params " + variant,
            [fx.exe1, "--data", fx.tokens, "--steps", 1] + RUN_FLAGS +
            ["--dump-rank-params", target], "invalid", prepare=prepare,
            check=checked_before_training, env=fx.env, timeout=30))
    return result
