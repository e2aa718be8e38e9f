#!/usr/bin/env python3
"""spoil-checkpoint.py IN OUT EDIT [ARG]

Writes OUT: the bitpipe checkpoint IN with one edit, and with its CRC-32C
checksums recomputed (docs/runtime-abi.md, "Checkpoints"), so that the
loader's value checks, not its checksums, must refuse it: what a buggy or
hostile tool could write. Standard library only.

  nan-weight TENSOR       element 0 of TENSOR becomes NaN
  inf-weight TENSOR       element 0 of TENSOR becomes +Inf
  nan-moment TENSOR       element 0 of optim.m.TENSOR becomes NaN
  negative-v TENSOR       element 0 of optim.v.TENSOR becomes -1
  step VALUE              __metadata__ step becomes VALUE (a string)
  flip-byte TENSOR        one bit of TENSOR's data flips, checksums left
                          as they were (the checksum must catch it)
"""
import json
import struct
import sys


def crc32c_table():
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for byte in data:
        c = (c >> 8) ^ TABLE[(c ^ byte) & 0xFF]
    return c ^ 0xFFFFFFFF


def metadata_crc(meta):
    crc = 0
    for key in sorted(meta, key=lambda k: k.encode("utf-8")):
        if key.startswith("crc32c."):
            continue
        crc = crc32c(key.encode("utf-8") + b"\0", crc)
        crc = crc32c(meta[key].encode("utf-8") + b"\0", crc)
    return crc


def main():
    src, dst, edit = sys.argv[1], sys.argv[2], sys.argv[3]
    arg = sys.argv[4] if len(sys.argv) > 4 else ""
    raw = open(src, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = bytearray(raw[8 + n:])
    meta = header["__metadata__"]

    def tensor_bytes(name):
        begin, end = header[name]["data_offsets"]
        return begin, end

    def set_first(name, value):
        begin, end = tensor_bytes(name)
        data[begin:begin + 4] = struct.pack("<f", value)
        meta["crc32c." + name] = "%08x" % crc32c(bytes(data[begin:end]))

    if edit == "nan-weight":
        set_first(arg, float("nan"))
    elif edit == "inf-weight":
        set_first(arg, float("inf"))
    elif edit == "nan-moment":
        set_first("optim.m." + arg, float("nan"))
    elif edit == "negative-v":
        set_first("optim.v." + arg, -1.0)
    elif edit == "step":
        meta["step"] = arg
    elif edit == "flip-byte":
        begin, _ = tensor_bytes(arg)
        data[begin + 1] ^= 0x10
    else:
        sys.exit("spoil-checkpoint.py: unknown edit '%s'" % edit)
    if edit != "flip-byte":
        meta["crc32c.__metadata__"] = "%08x" % metadata_crc(meta)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(dst, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + bytes(data))


if __name__ == "__main__":
    main()
