"""Reads and writes safetensors files (the format's own definition: an
8-byte little-endian header length, a JSON header mapping tensor names to
dtype, shape and byte offsets, then the raw little-endian data).

Only what the reference needs: F32 and BF16 tensors in, F32 (or, for the
Hugging Face tests, BF16) tensors out. Written without the runtime's reader
so that a fault there cannot hide itself.
"""
import json
import os
import struct
import tempfile

import numpy as np


def bf16_to_f32(raw):
    """BF16 is the upper half of an F32: shift the bits back."""
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32)


def f32_to_bf16(array):
    """Round to nearest even, as torch's .to(torch.bfloat16) (no NaNs)."""
    bits = np.ascontiguousarray(array, dtype="<f4").view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype("<u2").tobytes()


def read(path):
    """Returns ({name: float64 array}, metadata) of every F32 and BF16
    tensor."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] not in ("F32", "BF16"):
            continue
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        array = (np.frombuffer(body[begin:end], dtype="<f4")
                 if entry["dtype"] == "F32" else bf16_to_f32(body[begin:end]))
        if array.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: tensor '{name}' has {array.size} "
                             f"values for shape {list(shape)}")
        tensors[name] = array.reshape(shape).astype(np.float64)
    return tensors, meta


def write(path, tensors, metadata=None, dtype="F32"):
    """Writes {name: array} as `dtype` (F32 or BF16), atomically
    (temporary file, rename)."""
    header = {}
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    chunks, offset = [], 0
    for name in sorted(tensors):
        raw = (np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
               if dtype == "F32" else f32_to_bf16(tensors[name]))
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for raw in chunks:
                f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
