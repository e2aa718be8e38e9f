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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from safetensors_file import Safetensors  # noqa: E402


def main():
    src, dst, edit = sys.argv[1], sys.argv[2], sys.argv[3]
    arg = sys.argv[4] if len(sys.argv) > 4 else ""
    st = Safetensors.read(src)
    if edit == "nan-weight":
        st.set_f32(arg, 0, float("nan"))
    elif edit == "inf-weight":
        st.set_f32(arg, 0, float("inf"))
    elif edit == "nan-moment":
        st.set_f32("optim.m." + arg, 0, float("nan"))
    elif edit == "negative-v":
        st.set_f32("optim.v." + arg, 0, -1.0)
    elif edit == "step":
        st.header["__metadata__"]["step"] = arg
    elif edit == "flip-byte":
        begin = st.header[arg]["data_offsets"][0]
        st.data[begin + 1] ^= 0x10
    else:
        sys.exit("spoil-checkpoint.py: unknown edit '%s'" % edit)
    if edit != "flip-byte":
        st.reseal()
    st.write(dst)


if __name__ == "__main__":
    main()
