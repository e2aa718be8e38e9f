#!/usr/bin/env bash
# Evaluation on held-out tokens (docs/training-semantics.md, "Evaluation"):
#   - the validation loss of every schedule and rank count is the 1-rank
#     run's, bit for bit, at every evaluation;
#   - evaluating changes nothing of the training: the same losses and the
#     same weights, bit for bit, as a run without --eval-data.
#
#   evaluation.sh MODEL SCHEDULE D K N WORKDIR
# BITPIPE_BIN: the build's bin directory.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -eq 6 ] || { echo "usage: $0 MODEL SCHEDULE D K N WORKDIR" >&2; exit 2; }
model=$1 schedule=$2 d=$3 k=$4 n=$5 work=$6
name=$(basename "$model" .json)
dir=$work/evaluation-$name-$schedule-d$d-dp$k-n$n
rm -rf "$dir" && mkdir -p "$dir"
data=$(tokens "$work")
# Held out: one license the training corpus holds among many, enough for
# the evaluations' batches in order.
"$bin/bitpipe-tokenize" -o "$dir/eval.bin" /usr/share/common-licenses/GPL-3 >/dev/null
total=$((n * k))
"$bin/bitpipe-compile" "$model" --devices 1 --schedule gpipe \
  --microbatches "$total" -o "$dir/one"
"$bin/bitpipe-compile" "$model" --devices "$d" --dp "$k" \
  --schedule "$schedule" --microbatches "$n" -o "$dir/many"
flags=(--data "$data" "${base_flags[@]}" --steps 4)
eval=(--eval-data "$dir/eval.bin" --eval-interval 2 --eval-iters 2)

run 1 "$dir/one" "${flags[@]}" --metrics "$dir/plain.jsonl" \
  --save "$dir/plain.safetensors" >/dev/null
run 1 "$dir/one" "${flags[@]}" "${eval[@]}" --metrics "$dir/one.jsonl" \
  --save "$dir/one.safetensors" >/dev/null
run $((d * k)) "$dir/many" "${flags[@]}" "${eval[@]}" \
  --metrics "$dir/many.jsonl" --save "$dir/many.safetensors" | tee "$dir/many.log"

# Evaluated at steps 2 and 4 (the interval, and the end).
[ "$(grep -c '"eval_loss"' "$dir/one.jsonl")" = 2 ] || {
  echo "evaluation: expected evaluations at steps 2 and 4 in $dir/one.jsonl" >&2
  exit 1
}
grep -q "^eval at step 4 | loss [0-9.]* |" "$dir/many.log" || {
  echo "evaluation: the run did not print its evaluation at step 4" >&2
  exit 1
}
# The same validation losses on every schedule and rank count...
"$bin/bitpipe-compare" --rtol 0 --metrics "$dir/many.jsonl" "$dir/one.jsonl"
"$bin/bitpipe-compare" --rtol 0 --reference "$dir/one.safetensors" \
  "$dir/many.safetensors"
# ...and no trace of the evaluations in the training.
"$bin/bitpipe-compare" --rtol 0 --metrics "$dir/one.jsonl" "$dir/plain.jsonl"
"$bin/bitpipe-compare" --rtol 0 --reference "$dir/plain.safetensors" \
  "$dir/one.safetensors"
echo "evaluation: ok"
