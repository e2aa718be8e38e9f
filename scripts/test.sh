#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: lit (check-bitpipe)
# and GoogleTest/end-to-end tests (ctest). Both runners print their summaries.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

status=0
echo "== lit (check-bitpipe) =="
cmake --build "$build" --target check-bitpipe || status=1
echo "== ctest =="
(cd "$build" && ctest --output-on-failure -j"$(nproc)") || status=1
exit $status
