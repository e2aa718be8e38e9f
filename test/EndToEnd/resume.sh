#!/usr/bin/env bash
# Resume is exact: training k steps, saving, loading and training m more
# reaches the same weights, AdamW moments and per-step losses, bit for bit,
# as training k + m steps without a stop. The second half may run on
# another schedule, rank count or data-parallel width (same N x K
# micro-batches per step): a checkpoint is the whole model, whatever wrote
# it.
#
#   resume.sh MODEL SCHEDULE D K N WORKDIR [SCHEDULE2 D2 K2 N2]
#             [-- FLAG... [-- FLAG...]]
# FLAGs (e.g. --shard-optimizer) go to the halves, not to the run without
# a stop, which the halves must still match bit for bit: one list to both
# halves, two lists to the first half and the second.
# BITPIPE_BIN: the build's bin directory.
set -euo pipefail
source "$(dirname "$0")/common.sh"
k_steps=2 total=4

args=() first_flags=() second_flags=() lists=0
while (($#)); do
  if [ "$1" = -- ]; then
    lists=$((lists + 1))
  elif ((lists == 0)); then
    args+=("$1")
  elif ((lists == 1)); then
    first_flags+=("$1")
  else
    second_flags+=("$1")
  fi
  shift
done
((lists >= 2)) || second_flags=("${first_flags[@]}")
set -- "${args[@]}"
[ $# -eq 6 ] || [ $# -eq 10 ] ||
  { echo "usage: $0 MODEL SCHEDULE D K N WORKDIR [SCHEDULE2 D2 K2 N2] [-- FLAG...]" >&2; exit 2; }
model=$1 s1=$2 d1=$3 k1=$4 n1=$5 work=$6
s2=${7:-$s1} d2=${8:-$d1} k2=${9:-$k1} n2=${10:-$n1}
if [ $((n1 * k1)) -ne $((n2 * k2)) ]; then
  echo "resume.sh: both halves must train N x K = the same micro-batches per step" >&2
  exit 2
fi
name=$(basename "$model" .json)
dir=$work/resume-$name-$s1-d$d1-dp$k1-n$n1$(flags_tag "${first_flags[@]}")-then-$s2-d$d2-dp$k2-n$n2$(flags_tag "${second_flags[@]}")
rm -rf "$dir" && mkdir -p "$dir"
data=$(tokens "$work")
"$bin/bitpipe-compile" "$model" --devices "$d1" --dp "$k1" \
  --schedule "$s1" --microbatches "$n1" -o "$dir/first"
"$bin/bitpipe-compile" "$model" --devices "$d2" --dp "$k2" \
  --schedule "$s2" --microbatches "$n2" -o "$dir/second"
flags=(--data "$data" "${base_flags[@]}")

# Without a stop.
run $((d1 * k1)) "$dir/first" "${flags[@]}" --steps "$total" \
  --metrics "$dir/whole.jsonl" --save "$dir/whole.safetensors"
# With one: the second run appends its steps to the first's metrics.
run $((d1 * k1)) "$dir/first" "${flags[@]}" "${first_flags[@]}" \
  --steps "$k_steps" --metrics "$dir/resumed.jsonl" \
  --save "$dir/half.safetensors"
run $((d2 * k2)) "$dir/second" "${flags[@]}" "${second_flags[@]}" \
  --steps "$total" \
  --load "$dir/half.safetensors" --metrics "$dir/resumed.jsonl" \
  --save "$dir/resumed.safetensors" | tee "$dir/second.log"
grep -q "^bitpipe: resumed .*step $k_steps" "$dir/second.log" || {
  echo "resume.sh: the second run did not say it resumed at step $k_steps" >&2
  exit 1
}
case " ${second_flags[*]} " in
*" --shard-optimizer "*)
  grep -q "^bitpipe: optimizer: moments of [1-9][0-9]* of" "$dir/second.log" || {
    echo "resume.sh: the second run sharded no moments" >&2
    exit 1
  }
  ;;
esac

# Every step, every weight and both AdamW moments: exactly equal.
"$bin/bitpipe-compare" --rtol 0 --metrics "$dir/resumed.jsonl" "$dir/whole.jsonl"
"$bin/bitpipe-compare" --rtol 0 --reference "$dir/whole.safetensors" \
  "$dir/resumed.safetensors"
