"""Reads and writes safetensors files (runtime/lib/train/Safetensors.h) so
that cases can damage one field of a good checkpoint and nothing else."""
import json
import struct


class Safetensors:
    def __init__(self, header, data):
        self.header = header  # the JSON header, __metadata__ included
        self.data = bytearray(data)

    @staticmethod
    def read(path):
        with open(path, "rb") as f:
            raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        return Safetensors(json.loads(raw[8:8 + n]), raw[8 + n:])

    def tensors(self):
        return [k for k in self.header if k != "__metadata__"]

    def set_f32(self, name, index, value):
        begin = self.header[name]["data_offsets"][0] + 4 * index
        self.data[begin:begin + 4] = struct.pack("<f", value)

    def encode(self):
        text = json.dumps(self.header, separators=(",", ":")).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        return struct.pack("<Q", len(text)) + text + bytes(self.data)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.encode())
