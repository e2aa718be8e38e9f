#!/usr/bin/env bash
# Installs what is missing, checks the format of the lines the checked-out
# commit changes (scripts/check-format.sh), builds, and runs every test: lit
# (check-bitpipe) and GoogleTest/end-to-end tests (ctest). Both runners print
# their summaries; a format failure fails the run but stops neither.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"

status=0
echo "== format (changed lines) =="
"$root/scripts/check-format.sh" || status=1

"$root/scripts/build.sh"

echo "== lit (check-bitpipe) =="
cmake --build "$build" --target check-bitpipe || status=1
echo "== ctest =="
(cd "$build" && ctest --output-on-failure -j"$(nproc)") || status=1
exit $status
