#!/usr/bin/env bash
# Installs, on Debian 12, every package that building and testing bitpipe needs.
# Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build python3 python3-numpy
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  clang-format-19
  libgtest-dev libzstd-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  libopenblas-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "bitpipe: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
