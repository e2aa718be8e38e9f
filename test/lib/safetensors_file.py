"""Reads, edits and writes bitpipe checkpoints (safetensors,
runtime/lib/train/Safetensors.h; the checksums of docs/runtime-abi.md,
"Checkpoints") so that a test can damage one field of a good checkpoint and
nothing else. Standard library only; shared by test/EndToEnd and
test/Faults."""
import json
import struct


def _crc32c_table():
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli), continuing from `crc`."""
    c = crc ^ 0xFFFFFFFF
    for byte in data:
        c = (c >> 8) ^ _TABLE[(c ^ byte) & 0xFF]
    return c ^ 0xFFFFFFFF


def metadata_crc(meta):
    """The checksum of every metadata entry but the checksums, by key."""
    crc = 0
    for key in sorted(meta, key=lambda k: k.encode("utf-8")):
        if key.startswith("crc32c."):
            continue
        crc = crc32c(key.encode("utf-8") + b"\0", crc)
        crc = crc32c(meta[key].encode("utf-8") + b"\0", crc)
    return crc


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

    def reseal(self):
        """Recomputes the checksums after an edit, as a buggy or hostile
        writer would, so that the loader's other checks must refuse it."""
        meta = self.header.setdefault("__metadata__", {})
        for key in [k for k in meta if k.startswith("crc32c.")]:
            del meta[key]
        for name in self.tensors():
            begin, end = self.header[name]["data_offsets"]
            meta["crc32c." + name] = "%08x" % crc32c(bytes(self.data[begin:end]))
        meta["crc32c.__metadata__"] = "%08x" % metadata_crc(meta)

    def encode(self):
        text = json.dumps(self.header, separators=(",", ":")).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        return struct.pack("<Q", len(text)) + text + bytes(self.data)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.encode())
