#!/usr/bin/env bash
# check.sh: the one prepared GPU check: today the CUDA kernel tests.
#
# The prepared device check of bitpipe/cuda.h's kernels (issue 6, first
# slice). It was written on a machine without a GPU and has not run on one
# yet. Build where there is no GPU (scripts/build.sh configures CUDA for
# sm_90, the H200's), carry the test binary's folder, and run this from the
# repository root on the GPU machine:
#
#   carry:    build/runtime/unittests/cuda   (~2 MB: cudart and GoogleTest
#             are linked statically)
#   command:  bench/gpu/check.sh [--sanitize] [gtest flags...]
#
# The binary is run directly rather than through ctest: ctest's files hold
# the build machine's absolute paths. Output: the tests' own log, then, last,
# a table with one row per kernel and output tensor: the largest normalized
# error over the shapes tested (|err| / (|expected| + 0.1 max|expected|), the
# quantity the tests bound), the tolerance, and PASS only if every shape
# passed. No timing: there are no performance targets yet.
#
# --sanitize: afterwards, run the tests again under compute-sanitizer's
#   memcheck (out-of-bounds and misaligned accesses, which a passing result
#   can hide); slower, and it only adds a verdict line.
#
# Exit status: 0 all ran and passed; 1 a test failed (or the sanitizer found
# errors); 2 the binary is missing; 3 tests were skipped, i.e. no usable
# device (the reason is in the log).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}
bin=$build/runtime/unittests/cuda/CudaKernelTests
out=${OUT:-${TMPDIR:-/tmp}}
log=$out/cuda-kernel-tests.log

# Seconds each run may take (the plain run is expected to need well under a
# minute; not measured yet).
limit=${BITPIPE_CHECK_TIMEOUT:-240}
sanitize=0
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=1
  shift
fi

if [ ! -x "$bin" ]; then
  echo "check: $bin not found: build with CUDA (scripts/build.sh) and" \
       "carry build/runtime/unittests/cuda" >&2
  exit 2
fi

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  2>&1 || echo "(nvidia-smi failed)"

echo "== tests ($bin)"
timeout "$limit" "$bin" --gtest_color=no "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

sanitizer_verdict=""
if [ "$sanitize" = 1 ]; then
  sanitizer=${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer
  echo "== compute-sanitizer memcheck"
  if [ ! -x "$sanitizer" ]; then
    sanitizer_verdict="memcheck: not run ($sanitizer not found)"
  elif timeout "$limit" "$sanitizer" --tool memcheck --error-exitcode 99 \
       "$bin" --gtest_color=no "$@" > "$out/cuda-kernel-tests-memcheck.log" 2>&1; then
    sanitizer_verdict="memcheck: clean"
  else
    sanitizer_verdict="memcheck: FAILED (see $out/cuda-kernel-tests-memcheck.log)"
    tail -40 "$out/cuda-kernel-tests-memcheck.log"
    status=1
  fi
fi

echo
echo "== summary (largest normalized error over the shapes tested)"
grep '^BPCHECK ' "$log" | awk '
  {
    key = $2 " " $3
    if (!(key in worst)) { order[n++] = key; worst[key] = 0; pass[key] = "PASS"; shapes[key] = 0 }
    err = $5 + 0
    if ($5 ~ /nan|inf/) err = "inf"
    if (err == "inf" || worst[key] == "inf") worst[key] = "inf"
    else if (err > worst[key]) worst[key] = err
    tol[key] = $6
    if ($7 != "PASS") pass[key] = "FAIL"
    shapes[key]++
  }
  END {
    printf "%-18s %-22s %7s %11s %9s %s\n", "kernel", "tensor", "shapes", "max error", "tolerance", "pass"
    for (i = 0; i < n; i++) {
      k = order[i]; split(k, parts, " ")
      e = (worst[k] == "inf") ? "inf" : sprintf("%.3e", worst[k])
      printf "%-18s %-22s %7d %11s %9s %s\n", parts[1], parts[2], shapes[k], e, tol[k], pass[k]
    }
    if (n == 0) print "(no checks ran)"
  }'
[ -n "$sanitizer_verdict" ] && echo "$sanitizer_verdict"

if grep -q '^\[  SKIPPED \]' "$log"; then
  echo "check: tests were skipped: no usable CUDA device (see above)" >&2
  [ "$status" = 0 ] && status=3
fi
grep -E '^\[  (PASSED|FAILED)  \]' "$log" | tail -3
exit "$status"
