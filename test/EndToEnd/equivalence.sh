#!/usr/bin/env bash
# One end-to-end equivalence case: compile MODEL for a schedule on D devices
# x K data-parallel copies, train it for 3 steps under mpirun, and check that
# the loss of every step and every rank's parameters equal those of a
# 1-rank run on the same N*K micro-batches (to 1e-5 relative).
#
# The reference is one process running the micro-batches one after the
# other, its model cut in two stages (interleaved-1f1b with 2 chunks on one
# device): the tied token embedding then collects its two gradient
# contributions (embedding, output projection) in two stages, as on every
# multi-device schedule, instead of summing them in fp32 inside one backward
# function. Everything else is the same arithmetic. With the runtime's
# float64 gradient accumulation the runs then agree to the last bit or
# nearly; without that care, AdamW turns the rounding noise of gradients
# that are zero in exact arithmetic (the attention's key bias) into
# parameter differences of ~1e-4 relative.
#
#   equivalence.sh reference MODEL N_TOTAL WORKDIR
#       compiles and runs the 1-rank reference (a ctest fixture);
#   equivalence.sh case MODEL SCHEDULE D K N WORKDIR
#       compiles and runs one case and compares it with the reference of
#       MODEL and N*K, which must exist in WORKDIR.
#
# BITPIPE_BIN: the directory of bitpipe-compile, bitpipe-tokenize and
# bitpipe-compare.
set -euo pipefail
bin=${BITPIPE_BIN:?set BITPIPE_BIN to the bin directory of the build}
steps=3
seed=20261130
run_flags=(--steps "$steps" --seed "$seed" --lr 1e-3 --timeout 120)

# mpirun as root and with more ranks than cores (the CI machine has 2).
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)

tokens() { # the corpus: Debian's license texts, as byte tokens
  local out=$1/tokens.bin
  [ -f "$out" ] || "$bin/bitpipe-tokenize" -o "$out" /usr/share/common-licenses/* >/dev/null
  echo "$out"
}

case $1 in
reference)
  model=$2 n=$3 work=$4
  name=$(basename "$model" .json)
  ref=$work/ref-$name-n$n
  mkdir -p "$ref"
  data=$(tokens "$work")
  "$bin/bitpipe-compile" "$model" --devices 1 --schedule interleaved-1f1b \
    --chunks-per-device 2 --microbatches "$n" -o "$ref/train"
  OPENBLAS_NUM_THREADS=1 "$ref/train" --data "$data" "${run_flags[@]}" \
    --metrics "$ref/metrics.jsonl" --dump-rank-params "$ref/params"
  ;;
case)
  model=$2 schedule=$3 d=$4 k=$5 n=$6 work=$7
  name=$(basename "$model" .json)
  ref=$work/ref-$name-n$((n * k))
  dir=$work/$name-$schedule-d$d-dp$k
  rm -rf "$dir" && mkdir -p "$dir"
  data=$(tokens "$work")
  "$bin/bitpipe-compile" "$model" --devices "$d" --dp "$k" \
    --schedule "$schedule" --microbatches "$n" -o "$dir/train"
  mpirun "${mpirun_flags[@]}" -np $((d * k)) "$dir/train" --data "$data" \
    "${run_flags[@]}" --metrics "$dir/metrics.jsonl" \
    --dump-rank-params "$dir/params" | tee "$dir/run.log"
  # The saved activations in flight peaked where the compiler predicted
  # from the schedule, on every rank.
  grep -q "saved activations in flight.*as the schedule predicts" "$dir/run.log"
  "$bin/bitpipe-compare" --metrics "$dir/metrics.jsonl" "$ref/metrics.jsonl"
  for ((r = 0; r < d * k; ++r)); do
    "$bin/bitpipe-compare" "$dir/params/rank$r.safetensors" \
      "$ref/params/rank0.safetensors"
  done
  ;;
*)
  echo "usage: $0 reference MODEL N WORKDIR | case MODEL SCHEDULE D K N WORKDIR" >&2
  exit 2
  ;;
esac
