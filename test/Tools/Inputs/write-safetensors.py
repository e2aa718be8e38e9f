"""write-safetensors.py OUT [NAME=SHAPE:VALUES | NAME@DTYPE=SHAPE:VALUES]...

Writes a small safetensors file for the tests of bitpipe-compare, with the
standard library only. SHAPE is "2x3" (or "" for a scalar), VALUES a comma
list of numbers, as many as the shape holds; DTYPE defaults to F32 (F64 and
I32 are the others understood). No tensor at all writes an empty file with
a valid header.
"""
import json
import struct
import sys

FORMATS = {"F32": "f", "F64": "d", "I32": "i"}


def main(out, specs):
    header, body = {}, b""
    for spec in specs:
        name, rest = spec.split("=", 1)
        dtype = "F32"
        if "@" in name:
            name, dtype = name.split("@")
        shape_text, values_text = rest.split(":", 1)
        shape = [int(d) for d in shape_text.split("x")] if shape_text else []
        values = [float(v) for v in values_text.split(",")]
        fmt = FORMATS[dtype]
        if fmt == "i":
            values = [int(v) for v in values]
        raw = struct.pack("<%d%s" % (len(values), fmt), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
