#!/usr/bin/env python3
"""regenerate.py BIN_DIR: rewrites the seed corpora of the fuzz targets.

The seeds are small valid (and a few deliberately invalid) inputs taken from
the repository's own examples and tests, so that mutants start close to what
the readers accept (docs/robustness.md):

  config/       examples/*.json, test/Inputs/*.json, test/Import/Inputs/*.json
                and a tiny bitpipe config;
  ir/           the cases of the nn and bitpipe dialect tests and of the
                bitpipe-verify tests (split at "// -----", comment lines
                dropped), a tiny model's IR from bitpipe-import and its
                per-rank programs from bitpipe-opt --bitpipe-pipeline (short
                ones, and long enough to hold bitpipe.repeat);
  safetensors/  small files in the layout the checkpoint writer uses
                (parameters, optim.m.*, optim.v.*, __metadata__ with format,
                step, seed, fingerprint), and other dtypes.

Standard library only. BIN_DIR holds bitpipe-import and bitpipe-opt.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

FUZZ = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(FUZZ)
CORPUS = os.path.join(FUZZ, "corpus")

TINY_CONFIG = {"name": "gpt_seed", "family": "gpt", "layers": 2, "hidden": 8,
               "heads": 2, "vocab": 16, "max_positions": 8, "seq_len": 4,
               "microbatch_size": 2}


def fresh(name):
    path = os.path.join(CORPUS, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def config_seeds():
    out = fresh("config")
    for d in ("examples", "test/Inputs", "test/Import/Inputs"):
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if name.endswith(".json"):
                shutil.copy(os.path.join(ROOT, d, name), os.path.join(out, name))
    write(os.path.join(out, "tiny.json"), json.dumps(TINY_CONFIG))
    bert = dict(TINY_CONFIG, name="bert_seed", family="bert",
                layer_norm_epsilon=1e-12)
    write(os.path.join(out, "tiny-bert-eps.json"), json.dumps(bert))


def split_cases(text):
    """The cases of a -split-input-file test, without comment lines."""
    for case in text.split("// -----"):
        lines = [l for l in case.splitlines() if not l.lstrip().startswith("//")]
        body = "\n".join(lines).strip()
        if body:
            yield body + "\n"


def ir_seeds(bin_dir):
    out = fresh("ir")
    tests = ["test/Dialect/NN/ops.mlir", "test/Dialect/NN/attrs.mlir",
             "test/Dialect/NN/invalid.mlir", "test/Dialect/NN/attrs-invalid.mlir",
             "test/Dialect/BitPipe/round-trip.mlir",
             "test/Dialect/BitPipe/attrs.mlir",
             "test/Dialect/BitPipe/invalid.mlir",
             "test/Dialect/BitPipe/attrs-invalid.mlir",
             "test/Transforms/bitpipe-verify.mlir",
             "test/Transforms/bitpipe-verify-invalid.mlir"]
    for test in tests:
        with open(os.path.join(ROOT, test)) as f:
            cases = list(split_cases(f.read()))
        stem = test.split("/", 1)[1].replace("/", "-")[:-len(".mlir")]
        for i, case in enumerate(cases):
            write(os.path.join(out, "%s-%02d.mlir" % (stem, i)), case)
    config = os.path.join(out, "tiny.json")
    write(config, json.dumps(TINY_CONFIG))
    model = os.path.join(out, "tiny-model.mlir")
    subprocess.check_call([os.path.join(bin_dir, "bitpipe-import"),
                           "--config", config, "-o", model])
    os.remove(config)
    subprocess.check_call([os.path.join(bin_dir, "bitpipe-opt"), model,
                           "--bitpipe-pipeline=devices=2 schedule=1f1b "
                           "microbatches=2",
                           "-o", os.path.join(out, "tiny-programs.mlir")])
    # Enough micro-batches that the programs keep their steady state as
    # bitpipe.repeat (docs/repetition.md).
    subprocess.check_call([os.path.join(bin_dir, "bitpipe-opt"), model,
                           "--bitpipe-pipeline=devices=2 schedule=1f1b "
                           "microbatches=32",
                           "-o", os.path.join(out, "tiny-programs-rolled.mlir")])


def safetensors(tensors, metadata=None):
    """tensors: (name, dtype, shape, raw bytes) in file order."""
    header, body = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + body


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def safetensors_seeds():
    out = fresh("safetensors")
    meta = {"format": "bitpipe-v1", "step": "3", "seed": "7",
            "fingerprint": "0123456789abcdef"}
    w = f32(0.5, -1.0, 2.0, 0.25, 1e-3, 3.0)
    m = f32(0.1, 0.0, -0.1, 0.2, 0.0, 0.3)
    v = f32(0.01, 0.0, 0.01, 0.04, 0.0, 0.09)
    b = f32(0.0, 1.0)
    write(os.path.join(out, "checkpoint.safetensors"), safetensors(
        [("w", "F32", [2, 3], w), ("b", "F32", [2], b),
         ("optim.m.w", "F32", [2, 3], m), ("optim.m.b", "F32", [2], f32(0, 0)),
         ("optim.v.w", "F32", [2, 3], v), ("optim.v.b", "F32", [2], f32(0, 0))],
        meta))
    write(os.path.join(out, "scalar-and-empty.safetensors"), safetensors(
        [("s", "F32", [], f32(1.5)), ("e", "F32", [0, 4], b"")], {}))
    write(os.path.join(out, "dtypes.safetensors"), safetensors(
        [("d", "F64", [2], struct.pack("<2d", 1.0, -2.0)),
         ("i", "I32", [3], struct.pack("<3i", 1, 2, 3)),
         ("h", "BF16", [2], b"\x80\x3f\x00\x40"),
         ("u", "U8", [4], b"\x00\x01\xfe\xff")]))
    write(os.path.join(out, "empty.safetensors"), safetensors([]))


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    config_seeds()
    ir_seeds(argv[1])
    safetensors_seeds()


if __name__ == "__main__":
    main(sys.argv)
