#!/usr/bin/env python3
"""check-safetensors.py FILE KEY...

Validates FILE as the reference safetensors library does before it hands
tensors to numpy or PyTorch (header length, JSON header, __metadata__ of
strings, dtype sizes, data offsets contiguous from 0 and covering the whole
buffer), decodes every F32 tensor with the standard library, and checks that
__metadata__ has each KEY. Exits non-zero with the reason otherwise.
"""
import json
import math
import struct
import sys

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4,
         "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def main():
    path, keys = sys.argv[1], sys.argv[2:]
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str)
               for k, v in meta.items()), "metadata must map str to str"
    for k in keys:
        assert k in meta, "metadata lacks " + k
    buf = data[8 + n:]
    end = 0
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = t["data_offsets"]
        assert begin == end, "%s: data not contiguous (%d != %d)" % (name, begin, end)
        count = math.prod(t["shape"])
        assert stop - begin == count * SIZES[t["dtype"]], name + ": wrong size"
        if t["dtype"] == "F32":
            values = struct.unpack("<%df" % count, buf[begin:stop])
            assert all(math.isfinite(v) for v in values), name + ": not finite"
        end = stop
    assert end == len(buf), "data buffer has %d bytes, tensors cover %d" % (len(buf), end)
    print("%s: %d tensors, metadata %s" % (path, len(header), sorted(meta)))


if __name__ == "__main__":
    main()
