"""The small models, executables, checkpoints and token files every kind of
case starts from, built once per run of the suite in its work directory.

The model is examples/gpt-tiny.json cut down (2 layers, hidden 16), so that
a training step, a checkpoint and a compile take a fraction of a second.
exe1 runs on one rank without mpirun; exe2 runs on two under mpirun (the
BitPipe schedule), for the cases that need ranks to agree.
"""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VOCAB = 256
RUN_FLAGS = ["--seed", "7", "--lr", "1e-3", "--timeout", "20"]


class Fixtures:
    def __init__(self, bin_dir, work):
        self.bin = bin_dir
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.ompi = os.path.join(work, "ompi")
        os.makedirs(self.ompi, exist_ok=True)
        self.env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
                        OMPI_MCA_orte_tmpdir_base=self.ompi)

    def tool(self, name):
        return os.path.join(self.bin, name)

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def mpirun(self, np):
        flags = ["mpirun", "--oversubscribe", "--bind-to", "none",
                 "--mca", "orte_tmpdir_base", self.ompi,
                 "-x", "OPENBLAS_NUM_THREADS=1", "-np", str(np)]
        if os.getuid() == 0:
            flags.insert(1, "--allow-run-as-root")
        return flags

    def _run(self, argv):
        r = subprocess.run([str(a) for a in argv], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300)
        if r.returncode != 0:
            raise SystemExit("fault suite: building a fixture failed: %s\n%s"
                             % (" ".join(map(str, argv)),
                                r.stdout.decode(errors="replace")))
        return r.stdout.decode(errors="replace")

    def build(self):
        with open(os.path.join(ROOT, "examples", "gpt-tiny.json")) as f:
            config = json.load(f)
        config.update(name="gpt_fault", layers=2, hidden=16, heads=2,
                      vocab=VOCAB, max_positions=16, seq_len=8,
                      microbatch_size=2)
        self.config = self.path("tiny.json")
        with open(self.config, "w") as f:
            json.dump(config, f, indent=2)
        self.seq_len = config["seq_len"]

        self.model = self.path("tiny.mlir")
        self._run([self.tool("bitpipe-import"), "--config", self.config,
                   "-o", self.model])
        self.programs = self.path("programs.mlir")
        self._run([self.tool("bitpipe-opt"), self.model,
                   "--bitpipe-pipeline=devices=2 schedule=1f1b",
                   "-o", self.programs])
        # Long enough that the steady state is kept as bitpipe.repeat
        # (docs/repetition.md), with carried handles to get wrong.
        self.rolled_programs = self.path("rolled-programs.mlir")
        self._run([self.tool("bitpipe-opt"), self.model,
                   "--bitpipe-pipeline=devices=2 schedule=1f1b microbatches=16",
                   "-o", self.rolled_programs])
        self.exe1 = self.path("exe1")
        self._run([self.tool("bitpipe-compile"), self.config, "--devices", 1,
                   "--schedule", "gpipe", "--microbatches", 2,
                   "-o", self.exe1])
        self.exe2 = self.path("exe2")
        self._run([self.tool("bitpipe-compile"), self.config, "--devices", 2,
                   "--schedule", "bitpipe", "--microbatches", 4,
                   "-o", self.exe2])

        # Byte tokens of Debian's license texts (as the end-to-end tests),
        # 64 KiB of them: u16, all below the vocabulary size.
        self.tokens = self.path("tokens.bin")
        text = b""
        lic = "/usr/share/common-licenses"
        for name in sorted(os.listdir(lic)):
            p = os.path.join(lic, name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    text += f.read()
            if len(text) >= 1 << 15:
                break
        text = (text * 2)[:1 << 15]
        with open(self.tokens, "wb") as f:
            f.write(b"".join(bytes([c, 0]) for c in text))

        self.checkpoint = self.path("good.safetensors")
        self._run([self.exe1, "--data", self.tokens, "--steps", 1,
                   "--save", self.checkpoint] + RUN_FLAGS)
        self.checkpoint2 = self.path("good2.safetensors")
        self._run(self.mpirun(2) + [self.exe2, "--data", self.tokens,
                                    "--steps", 1, "--save", self.checkpoint2]
                  + RUN_FLAGS)
        # What the undamaged checkpoint trains to, and the checkpoint it
        # saves: a damaged one that loads must give the same bytes, or it
        # was silently wrong.
        self.resumed = self.path("resumed.safetensors")
        self.resumed_losses = losses(self._run(
            [self.exe1, "--data", self.tokens, "--steps", 2,
             "--load", self.checkpoint, "--save", self.resumed] + RUN_FLAGS))

        # The model and its programs as MLIR bytecode.
        self.model_bytecode = self.path("tiny.mlirbc")
        self._run([self.tool("bitpipe-opt"), self.model, "--emit-bytecode",
                   "-o", self.model_bytecode])
        self.programs_bytecode = self.path("programs.mlirbc")
        self._run([self.tool("bitpipe-opt"), self.programs, "--emit-bytecode",
                   "-o", self.programs_bytecode])

        # Chrome traces: a simulated 1F1B run (D=2, N=4) and a real one of
        # exe2 (BitPipe, D=2, N=4), two steps.
        self.sim_trace = self.path("simulated-trace.json")
        self._run([self.tool("bitpipe-opt"), self.model,
                   "--bitpipe-pipeline=devices=2 schedule=1f1b microbatches=4",
                   "--bitpipe-simulate=trace=" + self.sim_trace,
                   "-o", os.devnull])
        self.sim_trace_spec = "1f1b:2:4"
        self.run_trace = self.path("run-trace.json")
        self._run(self.mpirun(2) + [self.exe2, "--data", self.tokens,
                                    "--steps", 2, "--trace", self.run_trace]
                  + RUN_FLAGS)
        self.run_trace_spec = "bitpipe:2:4"

        # A Hugging Face checkpoint of exe1's model, one file and its
        # config, and what starting from it trains to.
        self.hf_dir = self.path("hf")
        self._run([self.exe1, "--data", self.tokens, "--steps", 1,
                   "--save-hf", self.hf_dir] + RUN_FLAGS)
        self.hf_losses = losses(self._run(
            [self.exe1, "--data", self.tokens, "--steps", 1, "--load",
             os.path.join(self.hf_dir, "model.safetensors")] + RUN_FLAGS))
        return self


def losses(output):
    """The loss of every step line ("step 2 | loss 5.2492 | ...")."""
    found = []
    for line in output.splitlines():
        if line.startswith("step ") and "| loss " in line:
            found.append(line.split("| loss ")[1].split()[0])
    return found


def nonfinite_loss(o):
    """The check of every training run: exit 0 after a non-finite loss
    is a silently wrong run."""
    if o.status == "accepted":
        for loss in losses(o.output):
            if loss.lower().lstrip("+-") in ("nan", "inf", "infinity"):
                return "exit 0 after a non-finite loss (%s)" % loss
    return None
