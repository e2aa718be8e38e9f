#!/usr/bin/env bash
# Faults of a compiled executable (gpt-tiny, BitPipe, 2 ranks): each must end
# with a clear message and a non-zero exit on every rank, and overwrite
# nothing. A rank killed mid-step must not leave the others hanging.
#
#   faults.sh WORKDIR        (BITPIPE_BIN: the build's bin directory)
set -uo pipefail
bin=${BITPIPE_BIN:?set BITPIPE_BIN to the bin directory of the build}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1/faults
rm -rf "$work" && mkdir -p "$work"
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)
failures=0

# expect_failure NAME PATTERN COMMAND...: the command exits non-zero within
# 120 s and its output matches PATTERN (an extended regular expression).
expect_failure() {
  local name=$1 pattern=$2
  shift 2
  local log=$work/$name.log rc
  timeout 120 "$@" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "FAIL $name: exited 0"; failures=$((failures + 1))
  elif [ $rc -eq 124 ]; then
    echo "FAIL $name: still running after 120 s"; failures=$((failures + 1))
  elif ! grep -Eq "$pattern" "$log"; then
    echo "FAIL $name: exit $rc, but no message matching /$pattern/:"
    sed 's/^/    /' "$log" | head -20; failures=$((failures + 1))
  else
    echo "ok   $name: exit $rc: $(grep -Em1 "$pattern" "$log")"
  fi
}

set -e
"$bin/bitpipe-tokenize" -o "$work/tokens.bin" /usr/share/common-licenses/* >/dev/null
"$bin/bitpipe-compile" "$root/examples/gpt-tiny.json" --devices 2 \
  --schedule bitpipe --microbatches 4 -o "$work/gpt"
"$bin/bitpipe-compile" "$root/examples/bert-tiny.json" --devices 2 \
  --schedule bitpipe --microbatches 4 -o "$work/bert"
run=(mpirun "${mpirun_flags[@]}" -np 2)
# A good checkpoint, and a file that no failed run may touch.
"${run[@]}" "$work/gpt" --data "$work/tokens.bin" --steps 1 --save "$work/good.safetensors" >/dev/null
cp "$work/good.safetensors" "$work/keep.safetensors"
set +e

expect_failure wrong-rank-count "compiled for 2 ranks" \
  mpirun "${mpirun_flags[@]}" -np 1 "$work/gpt" --data "$work/tokens.bin" --steps 1
expect_failure missing-data "nonexistent\.bin" \
  "${run[@]}" "$work/gpt" --data "$work/nonexistent.bin" --steps 1 --save "$work/keep.safetensors"
head -c 40 "$work/tokens.bin" >"$work/short.bin"
expect_failure short-data "short\.bin" \
  "${run[@]}" "$work/gpt" --data "$work/short.bin" --steps 1 --save "$work/keep.safetensors"
head -c 5000 "$work/good.safetensors" >"$work/corrupt.safetensors"
expect_failure corrupt-checkpoint "corrupt\.safetensors" \
  "${run[@]}" "$work/gpt" --data "$work/tokens.bin" --steps 2 \
  --load "$work/corrupt.safetensors" --save "$work/keep.safetensors"
expect_failure other-model-checkpoint "good\.safetensors" \
  "${run[@]}" "$work/bert" --data "$work/tokens.bin" --steps 2 \
  --load "$work/good.safetensors" --save "$work/keep.safetensors"
if cmp -s "$work/good.safetensors" "$work/keep.safetensors"; then
  echo "ok   nothing-overwritten: keep.safetensors unchanged"
else
  echo "FAIL nothing-overwritten: keep.safetensors changed"; failures=$((failures + 1))
fi

# A rank killed mid-run: the survivor must stop with an error within its
# communication timeout (10 s here), not hang.
start=$(date +%s)
timeout -s KILL 120 "${run[@]}" "$work/gpt" --data "$work/tokens.bin" \
  --steps 100000 --timeout 10 >"$work/killed.log" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 1 100); do
  victim=$(pgrep -f "^$work/gpt " | sort -n | tail -1)
  [ -n "$victim" ] && [ "$(pgrep -fc "^$work/gpt ")" -ge 2 ] && break
  sleep 0.2
done
sleep 2
kill -9 "$victim"
wait $launcher
rc=$?
elapsed=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $elapsed -lt 100 ]; then
  echo "ok   killed-rank: the job stopped with exit $rc after ${elapsed} s"
else
  echo "FAIL killed-rank: exit $rc after ${elapsed} s"; failures=$((failures + 1))
fi
pkill -9 -f "^$work/gpt " 2>/dev/null

echo "faults: $failures failure(s)"
[ $failures -eq 0 ]
