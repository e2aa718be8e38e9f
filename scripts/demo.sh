#!/usr/bin/env bash
# The main job: installs what is missing, builds bitpipe, and runs the demo on
# the tiny GPT of examples/gpt-tiny.json. Outputs go to ./out/demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}
out=${BITPIPE_DEMO_DIR:-$root/out/demo}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
mkdir -p "$out"
bin=$build/bin

echo "== 1. import: examples/gpt-tiny.json -> $out/gpt.mlir"
"$bin/bitpipe-import" gpt --config "$root/examples/gpt-tiny.json" -o "$out/gpt.mlir"

echo "== 2. cost analysis (per micro-batch)"
"$bin/bitpipe-opt" "$out/gpt.mlir" --bitpipe-annotate-cost=print-summary \
  -o "$out/gpt.cost.mlir"
