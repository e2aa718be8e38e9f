#!/usr/bin/env bash
# The threads of a rank (docs/launching.md, "Threads"):
#   - at --threads 2, every schedule and rank count computes the 1-rank
#     run's losses and weights bit for bit, as at one thread;
#   - 1 and 2 threads agree to float tolerance (OpenBLAS's products sum in
#     an order that depends on its thread count; the project's kernels do
#     not, runtime/unittests/cpu/ThreadsTest.cpp);
#   - the count's source is in the run's summary; a malformed
#     OMP_NUM_THREADS is refused, naming it, before any step.
#
#   threads.sh MODEL SCHEDULE D N WORKDIR
# BITPIPE_BIN: the build's bin directory.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -eq 5 ] || { echo "usage: $0 MODEL SCHEDULE D N WORKDIR" >&2; exit 2; }
model=$1 schedule=$2 d=$3 n=$4 work=$5
name=$(basename "$model" .json)
dir=$work/threads-$name-$schedule-d$d-n$n
rm -rf "$dir" && mkdir -p "$dir"
data=$(tokens "$work")
"$bin/bitpipe-compile" "$model" --devices 1 --schedule gpipe \
  --microbatches "$n" -o "$dir/one"
"$bin/bitpipe-compile" "$model" --devices "$d" --schedule "$schedule" \
  --microbatches "$n" -o "$dir/many"
flags=(--data "$data" "${base_flags[@]}" --steps 3)
fail() { echo "threads: $1" >&2; exit 1; }

for t in 1 2; do
  run 1 "$dir/one" "${flags[@]}" --threads $t --metrics "$dir/one-t$t.jsonl" \
    --save "$dir/one-t$t.safetensors" >"$dir/one-t$t.log"
done
run "$d" "$dir/many" "${flags[@]}" --threads 2 --metrics "$dir/many-t2.jsonl" \
  --save "$dir/many-t2.safetensors" >"$dir/many-t2.log"
grep -q ", 2 threads per rank (--threads)$" "$dir/many-t2.log" ||
  fail "the summary does not say 2 threads per rank (see $dir/many-t2.log)"

# The same thread count: the same bits, whatever the schedule.
"$bin/bitpipe-compare" --rtol 0 --metrics "$dir/many-t2.jsonl" "$dir/one-t2.jsonl"
"$bin/bitpipe-compare" --rtol 0 --reference "$dir/one-t2.safetensors" \
  "$dir/many-t2.safetensors"
# Another count: the same training, to float tolerance. AdamW divides by
# the root of the second moment, so a weight whose gradients are near zero
# moves by up to a step (lr) on a last-bit difference: each weight within
# a fifth of one step (lr 1e-3) of the other.
"$bin/bitpipe-compare" --rtol 1e-4 --metrics "$dir/one-t2.jsonl" "$dir/one-t1.jsonl"
"$bin/bitpipe-compare" --rtol 0 --atol 2e-4 --reference "$dir/one-t1.safetensors" \
  "$dir/one-t2.safetensors"

# Without the flag the count comes from the environment, else the CPUs.
env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS "$dir/one" "${flags[@]}" \
  --steps 1 >"$dir/default.log"
grep -Eq ", [0-9]+ threads? per rank \(the machine's CPUs|the rank's CPU binding\)$" \
  "$dir/default.log" || fail "no default thread count in $dir/default.log"
if OMP_NUM_THREADS=two "$dir/one" "${flags[@]}" --steps 1 >"$dir/bad.log" 2>&1; then
  fail "OMP_NUM_THREADS=two was accepted"
fi
grep -q "OMP_NUM_THREADS is 'two'; expected a whole number of threads" "$dir/bad.log" ||
  fail "OMP_NUM_THREADS=two: no message naming it (see $dir/bad.log)"
! grep -q "^step 1 " "$dir/bad.log" || fail "OMP_NUM_THREADS=two: a step ran"
echo "threads: ok"
