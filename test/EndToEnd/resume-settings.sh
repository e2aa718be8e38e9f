#!/usr/bin/env bash
# A resume keeps the optimizer's settings: a checkpoint stores them (the
# learning rate and its schedule, AdamW's betas, epsilon, weight decay and
# clipping), a resumed run takes every one whose flag it is not given, and
# says which ones a flag changes (docs/training-semantics.md, "Resuming").
#   - resumed with no optimizer flag, the run continues the schedule: the
#     same losses, learning rates and weights, bit for bit, as one run;
#   - resumed with --lr changed: a warning naming the flag and both values.
#
#   resume-settings.sh WORKDIR
# BITPIPE_BIN: the build's bin directory.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || { echo "usage: $0 WORKDIR" >&2; exit 2; }
dir=$1/resume-settings
rm -rf "$dir" && mkdir -p "$dir"
data=$(tokens "$1")
"$bin/bitpipe-compile" "$(dirname "$0")/../../examples/gpt-tiny.json" \
  --devices 2 --schedule bitpipe --microbatches 4 -o "$dir/train"
# Not the defaults, so that falling back to them would show. The decay's
# end is given: the first half runs --steps 2, whose default would be 2.
optimizer=(--lr 2e-3 --lr-warmup-steps 1 --lr-decay-style cosine
  --lr-decay-steps 4 --min-lr 2e-4 --adam-beta2 0.95 --weight-decay 0.1
  --max-grad-norm 1)
flags=(--data "$data" --seed 5 --timeout 120)

run 2 "$dir/train" "${flags[@]}" "${optimizer[@]}" --steps 4 \
  --metrics "$dir/whole.jsonl" --save "$dir/whole.safetensors"
run 2 "$dir/train" "${flags[@]}" "${optimizer[@]}" --steps 2 \
  --metrics "$dir/resumed.jsonl" --save "$dir/half.safetensors"
run 2 "$dir/train" "${flags[@]}" --steps 4 --load "$dir/half.safetensors" \
  --metrics "$dir/resumed.jsonl" --save "$dir/resumed.safetensors" \
  >"$dir/resumed.log" 2>&1 || { cat "$dir/resumed.log"; exit 1; }
cat "$dir/resumed.log"
if grep -q "warning" "$dir/resumed.log"; then
  echo "resume-settings: a resume without optimizer flags warned" >&2
  exit 1
fi
grep -q "^bitpipe: optimizer: AdamW lr 0.002 after 1 warm-up step, then cosine decay to 0.0002 by step 4, betas 0.9 0.95, eps 1e-08, weight decay 0.1, gradient norm clipped to 1$" \
  "$dir/resumed.log" || {
  echo "resume-settings: the resumed run did not take the checkpoint's settings" >&2
  exit 1
}
"$bin/bitpipe-compare" --rtol 0 --metrics "$dir/resumed.jsonl" "$dir/whole.jsonl"
"$bin/bitpipe-compare" --rtol 0 --reference "$dir/whole.safetensors" \
  "$dir/resumed.safetensors"

# A flag that changes a stored setting wins, with a warning.
run 2 "$dir/train" "${flags[@]}" --steps 3 --load "$dir/half.safetensors" \
  --lr 1e-3 >"$dir/changed.log" 2>&1 || { cat "$dir/changed.log"; exit 1; }
grep -q "^bitpipe: warning: --load $dir/half.safetensors: resuming with --lr 0.001 (the checkpoint trained with 0.002); the other optimizer settings are the checkpoint's$" \
  "$dir/changed.log" || {
  cat "$dir/changed.log"
  echo "resume-settings: changing --lr on a resume did not warn" >&2
  exit 1
}
echo "resume-settings: ok"
