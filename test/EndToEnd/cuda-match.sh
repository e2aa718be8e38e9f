#!/usr/bin/env bash
# The CUDA target against the CPU target: MODEL compiled for one
# rank trains 3 AdamW steps on the CPU and on one GPU, from the same initial
# checkpoint (written by the CPU run, loaded by both) on the same data, and
# the GPU run must reach the CPU run's losses and parameters:
#
#   --precision fp32 (fp32 everywhere, no TF32): every step's loss and
#     gradient norm within 1e-4 relative. The two targets
#     differ only in the order of their sums (the CPU runtime accumulates in
#     float64, the GPU in fp32 tiles); the CPU run itself is within 5e-8
#     (loss) and 1e-6 (gradient norm) of the float64 reference (measured,
#     gpt-tiny and bert-tiny, these 3 steps).
#     Parameters: per tensor, the update's error within 1e-3 of the update,
#     ||c - r||_2 <= 1e-3 ||r - init||_2 (absolute.sh's float32 bound). Not
#     1e-4 element-wise or per tensor's max: AdamW divides each gradient by
#     its own magnitude, so an element whose gradient is near zero (a GELU
#     unit that barely fires) moves by whatever its rounding noise says.
#     Measured between the CPU run and the float64 reference, same 3 steps:
#     max |c - r| reaches 6x (gpt-tiny) and 22x (bert-tiny) the 1e-4 max |r|
#     allowance on the MLP weights, while the update's norm is within
#     0.66e-4 and 2.3e-4; two fp32 implementations (CPU, GPU) should differ
#     by ~1.4x that, so 1e-3 keeps a margin of 3 or more.
#   --precision bf16 (bf16 weight copies, activations and their gradients;
#     fp32 master weights, accumulators, statistics and loss), against the
#     same fp32 CPU run. bf16 keeps 8 significant bits: each stored value is
#     rounded by up to 2^-9 = 2.0e-3 relative (RMS 1.1e-3, unbiased), at
#     ~50 points of a forward pass of these models (6 layers x ~8, and the
#     weight copies) and as many again in the backward; the residual stream
#     adds those errors rather than multiplying them, so a hidden state is
#     off by ~sqrt(50) x 1.1e-3 = 8e-3 relative, a gradient element by ~1e-2.
#     - loss, 5e-3 relative: the loss is a mean over 128 positions of
#       log-sum-exp(z) - z_label, which averages the logits' errors: ~4e-4
#       of a loss of ~5.5 by that estimate;
#     - gradient norm, 2e-2 relative: the per-element level; the norm
#       averages the elements' errors over 10^5 elements;
#     - parameters, on the update: ||c - r||_2 <= 0.5 ||r - init||_2 per
#       tensor. AdamW's first updates are nearly lr x sign(g) whatever |g|,
#       so an element whose gradient is below its bf16 error (a percent or
#       two of a tensor's elements) can move the other way, by up to 2 lr
#       per step: ~2 sqrt(0.02) = 0.3 of the update's norm. 0.5 allows for
#       it and still fails a run that did not update (1.0), updated with
#       the wrong sign (2.0) or along an unrelated gradient (~1.4).
#     cuda-bf16-emulation.py measures all three: the float64 reference with
#     bf16 rounding where the CUDA path stores bf16 stays within 1.7e-4
#     (loss), 1.2e-3 (gradient norm) and 0.12 of the update (parameters)
#     of the CPU run, for both models: margins of 29, 16 and 4 over the
#     device's own rounding, which the emulation leaves out in part
#     (residual sums, the order of the products' sums).
#   In both precisions the key third of the attention's qkv bias is checked
#   only against AdamW's bound (cuda-match-params.py says why: its gradient
#   is zero in exact arithmetic, so each run moves it by its own rounding
#   noise). The GPU run must also have trained (the loss fell, every
#   parameter moved: reference/check_progress.py) and written a Chrome
#   trace that parses. bitpipe-compare's verdict at 1e-4
#   (max |c - r| <= 1e-4 max |r| per tensor, key bias included) is printed
#   for the record (fp32) and does not decide.
#
#   cuda-match.sh reference MODEL WORKDIR [--if-device]
#       the CPU side: compile, write the initial checkpoint, train 3 steps
#       (no GPU needed; --if-device: skip unless there is one, as ctest's
#       fixture does, so that machines without a GPU spend nothing on it);
#   cuda-match.sh compile MODEL PRECISION WORKDIR
#       compile the CUDA executable (no GPU needed);
#   cuda-match.sh case MODEL PRECISION WORKDIR
#       train on the GPU (compiling first if WORKDIR lacks the executable)
#       and compare; needs the reference in WORKDIR;
#   cuda-match.sh diverge MODEL PRECISION WORKDIR
#       the same start with --lr 1e30 (docs/training-semantics.md,
#       "Non-finite values"): the GPU run must stop at step 2 naming the
#       step and the first non-finite parameter (read back from the
#       device), exit non-zero, and leave --save unwritten.
# WORKDIR/tokens.bin is the corpus (made with bitpipe-tokenize if absent);
# WORKDIR/<model name>/{cpu,fp32,bf16}/ hold the runs.
#
# BITPIPE_BIN: the directory of bitpipe-compile, bitpipe-tokenize,
# bitpipe-compare and bitpipe-gpu-probe (a prepared check folder holds only
# the last two); BITPIPE_PYTHON: a python3 with numpy.
# Exit status: 0 equal; 1 different or a run failed; 2 usage; 77 skipped
# (no usable CUDA device; the reason is printed).
set -euo pipefail
source "$(dirname "$0")/common.sh"
here=$(cd "$(dirname "$0")" && pwd)
steps=3
microbatches=4

usage() {
  echo "usage: $0 reference MODEL WORKDIR [--if-device] |" \
    "compile MODEL fp32|bf16 WORKDIR | case|diverge MODEL fp32|bf16 WORKDIR" >&2
  exit 2
}

precision_ok() { [ "$1" = fp32 ] || [ "$1" = bf16 ]; }

[ $# -ge 3 ] || usage
mode=$1 model=$2
name=$(basename "$model" .json)
case $mode in
reference)
  work=$3
  [ "${4:-}" = --if-device ] && require_device
  dir=$work/$name/cpu
  rm -rf "$dir" && mkdir -p "$dir"
  data=$(tokens "$work")
  "$bin/bitpipe-compile" "$model" --devices 1 --schedule gpipe \
    --microbatches "$microbatches" -o "$dir/train"
  run 1 "$dir/train" --data "$data" --steps 0 "${base_flags[@]}" \
    --save "$dir/init.safetensors" >/dev/null
  run 1 "$dir/train" --data "$data" --steps "$steps" "${base_flags[@]}" \
    --load "$dir/init.safetensors" --metrics "$dir/metrics.jsonl" \
    --dump-rank-params "$dir/params" | tee "$dir/run.log"
  ;;
compile)
  [ $# -eq 4 ] && precision_ok "$3" || usage
  precision=$3 work=$4
  dir=$work/$name/$precision
  mkdir -p "$dir"
  if ! "$bin/bitpipe-compile" "$model" --target cuda --precision "$precision" \
    --devices 1 --schedule gpipe --microbatches "$microbatches" \
    -o "$dir/train"; then
    echo "cuda-match: bitpipe-compile --target cuda --precision $precision" \
      "failed for $model (above)" >&2
    exit 1
  fi
  ;;
case)
  [ $# -eq 4 ] && precision_ok "$3" || usage
  precision=$3 work=$4
  require_device
  ref=$work/$name/cpu dir=$work/$name/$precision
  for f in init.safetensors metrics.jsonl params/rank0.safetensors; do
    if [ ! -f "$ref/$f" ]; then
      echo "cuda-match: $ref/$f is missing: run '$0 reference $model $work'" \
        "first" >&2
      exit 1
    fi
  done
  [ -x "$dir/train" ] || "$0" compile "$model" "$precision" "$work"
  rm -rf "$dir/params" "$dir/metrics.jsonl" "$dir/trace.json"
  data=$(tokens "$work")
  # The checkpoint fixes the seed (docs/training-semantics.md: a resumed run
  # continues exactly), so --seed is the checkpoint's own.
  if ! run 1 "$dir/train" --data "$data" --steps "$steps" "${base_flags[@]}" \
    --load "$ref/init.safetensors" --metrics "$dir/metrics.jsonl" \
    --dump-rank-params "$dir/params" --trace "$dir/trace.json" \
    2>&1 | tee "$dir/run.log"; then
    echo "cuda-match: the GPU run of $name ($precision) failed (above)" >&2
    exit 1
  fi

  if [ "$precision" = fp32 ]; then
    loss_rtol=1e-4 norm_rtol=1e-4
  else
    loss_rtol=5e-3 norm_rtol=2e-2
  fi
  status=0
  echo "== losses ($precision: loss within $loss_rtol, gradient norm within $norm_rtol)"
  "$bin/bitpipe-compare" --metrics --rtol "$loss_rtol" \
    --grad-norm-rtol "$norm_rtol" "$dir/metrics.jsonl" "$ref/metrics.jsonl" ||
    status=1
  echo "== parameters"
  "$python" "$here/cuda-match-params.py" --precision "$precision" \
    --steps "$steps" --lr 1e-3 --init "$ref/init.safetensors" \
    --reference "$ref/params/rank0.safetensors" \
    --candidate "$dir/params/rank0.safetensors" || status=1
  if [ "$precision" = fp32 ]; then
    echo "== for the record (does not decide): bitpipe-compare at 1e-4 of max |r|, the key bias included"
    "$bin/bitpipe-compare" --rtol 1e-4 --reference \
      "$ref/params/rank0.safetensors" "$dir/params/rank0.safetensors" |
      tail -1 || true
  fi
  echo "== the GPU run trained"
  "$python" "$reference_dir/check_progress.py" "$dir/metrics.jsonl" \
    "$ref/init.safetensors" "$dir/params/rank0.safetensors" || status=1
  echo "== its Chrome trace"
  "$python" - "$dir/trace.json" <<'EOF' || status=1
import json, sys
with open(sys.argv[1]) as f:
    trace = json.load(f)
events = trace["traceEvents"] if isinstance(trace, dict) else trace
if not events:
    sys.exit(f"{sys.argv[1]}: no events")
print(f"{sys.argv[1]}: {len(events)} events")
EOF
  if [ "$status" = 0 ]; then
    echo "cuda-match: $name $precision: PASS"
  else
    echo "cuda-match: $name $precision: FAIL"
  fi
  exit "$status"
  ;;
diverge)
  [ $# -eq 4 ] && precision_ok "$3" || usage
  precision=$3 work=$4
  require_device
  ref=$work/$name/cpu dir=$work/$name/$precision
  if [ ! -f "$ref/init.safetensors" ]; then
    echo "cuda-match: $ref/init.safetensors is missing: run '$0 reference" \
      "$model $work' first" >&2
    exit 1
  fi
  [ -x "$dir/train" ] || "$0" compile "$model" "$precision" "$work"
  data=$(tokens "$work")
  save=$dir/diverged.safetensors
  rm -f "$save"
  log=$dir/diverge.log
  rc=0
  run 1 "$dir/train" --data "$data" --steps "$steps" "${base_flags[@]}" \
    --load "$ref/init.safetensors" --lr 1e30 --save "$save" >"$log" 2>&1 ||
    rc=$?
  cat "$log"
  if [ "$rc" != 0 ] && [ ! -e "$save" ] &&
    grep -q "step 2: .*the first parameter (in model order) that went non-finite is '" "$log"; then
    echo "cuda-match: $name $precision diverge: PASS (exit $rc, nothing saved)"
    exit 0
  fi
  echo "cuda-match: $name $precision diverge: FAIL (exit $rc; expected non-zero," \
    "step 2 and the first non-finite parameter named, no $save)" >&2
  exit 1
  ;;
*)
  usage
  ;;
esac
