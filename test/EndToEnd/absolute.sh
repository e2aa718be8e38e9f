#!/usr/bin/env bash
# The absolute check of a compiled training step: compile MODEL for a
# schedule on D devices x K copies, train it for 5 AdamW steps, and hold it
# against the independent float64 reference (reference/train_reference.py,
# written from docs/training-semantics.md and the model definitions, sharing
# no code with the compiler or the runtime) started from the same initial
# parameters:
#   - every step's loss within 1e-6 relative, and its gradient norm within
#     1e-5 (float32 kernels against float64: the loss is a mean of
#     well-conditioned terms; the norm squares and sums 10^5 gradient
#     elements, some of them formed by cancellation);
#   - every parameter's update within 1e-3 of the reference's, in the L2
#     norm over each tensor (bitpipe-compare --update-from says why the
#     bound is on the update's norm and not element-wise); seen: <= 2.5e-4;
#   - the ranks together hold every parameter, replicas bit for bit alike.
#
#   absolute.sh MODEL SCHEDULE D K N WORKDIR [RUN FLAG...]
# RUN FLAGs (--max-grad-norm X, --sampling sequential) go to both sides.
# BITPIPE_BIN: the build's bin directory; BITPIPE_PYTHON: python3 with numpy.
set -euo pipefail
source "$(dirname "$0")/common.sh"
steps=5

[ $# -ge 6 ] || { echo "usage: $0 MODEL SCHEDULE D K N WORKDIR [FLAG...]" >&2; exit 2; }
model=$1 schedule=$2 d=$3 k=$4 n=$5 work=$6
shift 6
dir=$work/absolute-$(basename "$model" .json)-$schedule-d$d-dp$k-n$n$(flags_tag "$@")
rm -rf "$dir" && mkdir -p "$dir"
data=$(tokens "$work")

"$bin/bitpipe-compile" "$model" --devices "$d" --dp "$k" \
  --schedule "$schedule" --microbatches "$n" -o "$dir/train"
run $((d * k)) "$dir/train" --data "$data" --steps 0 "${base_flags[@]}" \
  --save "$dir/init.safetensors" >/dev/null
run $((d * k)) "$dir/train" --data "$data" --steps "$steps" "${base_flags[@]}" \
  "$@" --metrics "$dir/metrics.jsonl" --dump-rank-params "$dir/params"

"$python" "$reference_dir/train_reference.py" --config "$model" \
  --init "$dir/init.safetensors" --data "$data" --steps "$steps" \
  --microbatches "$n" --dp "$k" --seed "$seed" --lr 1e-3 "$@" \
  --metrics "$dir/reference.jsonl" --save "$dir/reference.safetensors"

"$bin/bitpipe-compare" --rtol 1e-6 --grad-norm-rtol 1e-5 \
  --metrics "$dir/metrics.jsonl" "$dir/reference.jsonl"
"$bin/bitpipe-compare" --rtol 1e-3 --update-from "$dir/init.safetensors" \
  --reference "$dir/reference.safetensors" "$dir"/params/rank*.safetensors
