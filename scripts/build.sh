#!/usr/bin/env bash
# Configures (once) and builds bitpipe into ./build with CMake and Ninja.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py \
    -DCMAKE_CUDA_ARCHITECTURES=90
fi
cmake --build "$build" -- -j"${BITPIPE_JOBS:-$(nproc)}"
