#!/usr/bin/env bash
# One end-to-end equivalence case: compile MODEL for a schedule on D devices
# x K data-parallel copies, train it for 3 steps under mpirun, and check that
# the loss of every step and every rank's parameters equal those of a
# 1-rank run on the same N*K micro-batches (to 1e-5 relative), that the
# ranks together hold every parameter, replicas bit for bit alike, and
# that the run trained: the loss fell and every parameter moved.
#
# The reference is one process running the micro-batches one after the
# other, the whole model in one stage. The runtime accumulates gradients in
# float64, and a parameter used twice in one stage (the tied token
# embedding: embedding and output projection) returns its two contributions
# separately, as two stages on two ranks do; so the runs agree to the last
# bit or nearly. Without that care, AdamW turns the rounding noise of
# gradients that are zero in exact arithmetic (the attention's key bias)
# into parameter differences of ~1e-4 relative. That this reference is
# itself right is absolute.sh's business (an independent float64
# implementation).
#
#   equivalence.sh reference MODEL N_TOTAL WORKDIR [RUN FLAG...]
#       compiles and runs the 1-rank reference (a ctest fixture);
#   equivalence.sh case MODEL SCHEDULE D K N WORKDIR [--chunks-per-device V]
#                  [--max-in-flight C] [--recompute MODE] [--units U]
#                  [--gradient-sync S] [--bucket-mb M] [--host-nccl]
#                  [RUN FLAG...]
#       compiles and runs one case and compares it with the reference of
#       MODEL, N*K and the same run flags, which must exist in WORKDIR;
#       --chunks-per-device, --max-in-flight, --recompute, --units,
#       --gradient-sync, --bucket-mb and --host-nccl (first, if given) go
#       to bitpipe-compile only
#       (interleaved-1f1b's v, 1f1b's cap on micro-batches in flight, what
#       the backward computes again, the units stages are cut from, how
#       groups sum across copies, the gradient buckets' capacity; the
#       reference has none of them). --host-nccl
#       checks the programs under NCCL's rules and links them with the NCCL
#       communicator over the strict MPI stand-in for NCCL
#       (docs/nccl-transfers.md, "Tested without a GPU"): the run then
#       moves its tensors as the CUDA target would, rendezvous sends and
#       streams in order, each run bounded by --timeout, and warms up as
#       the CUDA target does (--warm-up on, the case's run only).
# RUN FLAGs (e.g. --max-grad-norm 0.05) go to both runs.
#
# BITPIPE_BIN: the directory of bitpipe-compile, bitpipe-tokenize and
# bitpipe-compare; BITPIPE_PYTHON: a python3 with numpy;
# BITPIPE_HOST_NCCL_LINK: the runtime link file of --host-nccl.
set -euo pipefail
source "$(dirname "$0")/common.sh"
steps=3

# progress DIR RANKS: the loss fell and every parameter moved.
progress() {
  local dir=$1 ranks=$2 dumps=()
  for ((r = 0; r < ranks; ++r)); do dumps+=("$dir/params/rank$r.safetensors"); done
  "$python" "$reference_dir/check_progress.py" "$dir/metrics.jsonl" \
    "$dir/init.safetensors" "${dumps[@]}"
}

# train DIR NP FLAGS...: the initial parameters, then 3 steps.
train() {
  local dir=$1 np=$2 data
  shift 2
  data=$(tokens "$(dirname "$dir")")
  run "$np" "$dir/train" --data "$data" --steps 0 "${base_flags[@]}" \
    --save "$dir/init.safetensors" >/dev/null
  run "$np" "$dir/train" --data "$data" --steps "$steps" "${base_flags[@]}" \
    "$@" --metrics "$dir/metrics.jsonl" --dump-rank-params "$dir/params" |
    tee "$dir/run.log"
}

case $1 in
reference)
  model=$2 n=$3 work=$4
  shift 4
  ref=$work/ref-$(basename "$model" .json)-n$n$(flags_tag "$@")
  mkdir -p "$ref"
  "$bin/bitpipe-compile" "$model" --devices 1 --schedule gpipe \
    --microbatches "$n" -o "$ref/train"
  train "$ref" 1 "$@"
  progress "$ref" 1
  ;;
case)
  model=$2 schedule=$3 d=$4 k=$5 n=$6 work=$7
  shift 7
  compile_flags=() tag_flags=() case_flags=() host_nccl=
  while :; do
    case "${1:-}" in
    --chunks-per-device | --max-in-flight | --recompute | --units | --gradient-sync | --bucket-mb)
      compile_flags+=("$1" "$2") tag_flags+=("$1" "$2")
      shift 2
      ;;
    --host-nccl)
      compile_flags+=(--nccl-rules --runtime-link
        "${BITPIPE_HOST_NCCL_LINK:?set BITPIPE_HOST_NCCL_LINK for --host-nccl}")
      tag_flags+=("$1")
      host_nccl=1
      # The stand-in's rules, strict, given to every rank.
      export BITPIPE_FAKE_NCCL=strict
      mpirun_flags+=(-x BITPIPE_FAKE_NCCL)
      # And, as the CUDA target does, each stage function once before the
      # first step (Executor::warmUp): the reference does not, and the runs
      # must still agree.
      case_flags+=(--warm-up on)
      shift
      ;;
    *) break ;;
    esac
  done
  name=$(basename "$model" .json)
  ref=$work/ref-$name-n$((n * k))$(flags_tag "$@")
  dir=$work/$name-$schedule-d$d-dp$k-n$n$(flags_tag "${tag_flags[@]}" "$@")
  rm -rf "$dir" && mkdir -p "$dir"
  "$bin/bitpipe-compile" "$model" --devices "$d" --dp "$k" \
    --schedule "$schedule" --microbatches "$n" "${compile_flags[@]}" \
    -o "$dir/train"
  if [ -n "$host_nccl" ]; then
    # The run below goes through the stand-in, not MPI: only the stand-in
    # reads BITPIPE_FAKE_NCCL, and it refuses a word it does not know.
    if BITPIPE_FAKE_NCCL=unknown run $((d * k)) "$dir/train" --steps 0 \
      --data "$(tokens "$(dirname "$dir")")" >"$dir/transport.log" 2>&1 ||
      ! grep -q "BITPIPE_FAKE_NCCL='unknown'" "$dir/transport.log"; then
      cat "$dir/transport.log"
      echo "equivalence: $dir/train does not run its transfers through the NCCL stand-in" >&2
      exit 1
    fi
  fi
  train "$dir" $((d * k)) "${case_flags[@]}" "$@"
  if [ -n "$host_nccl" ] && ! grep -q '^bitpipe: warm-up: [1-9][0-9]* stage calls' "$dir/run.log"; then
    echo "equivalence: $dir/train did not warm up (--warm-up on)" >&2
    exit 1
  fi
  # With copies, the run says how its groups sum; a schedule whose stages
  # live on two ranks of a pipeline sums them in two levels unless told
  # flat (docs/data-parallel.md, "Two levels"), so that the two-level path
  # is what these cases check.
  if ((k > 1)); then
    case " ${compile_flags[*]} " in
    *" --gradient-sync flat "*) want='flat; 0 of' ;;
    *) want='hierarchical;' ;;
    esac
    grep -q "^bitpipe: gradient sync: $want" "$dir/run.log" || {
      echo "equivalence: $dir/run.log does not say 'gradient sync: $want'" >&2
      exit 1
    }
    case $schedule in
    bitpipe | bitpipe-zb | chimera)
      if [[ $want == hierarchical* ]] &&
        grep -q '^bitpipe: gradient sync: hierarchical; 0 of' "$dir/run.log"; then
        echo "equivalence: $schedule with $k copies summed no group in two levels" >&2
        exit 1
      fi
      ;;
    esac
  fi
  # --shard-optimizer (a run flag: the one-rank reference has no replicas
  # and shards nothing) shards every parameter that has replicas
  # (docs/data-parallel.md, "Sharded optimizer").
  case " $* " in
  *" --shard-optimizer "*)
    if ((k > 1)) && ! grep -q '^bitpipe: optimizer: moments of [1-9][0-9]* of [0-9]* parameters sharded' "$dir/run.log"; then
      echo "equivalence: $dir/run.log does not say which moments it sharded" >&2
      exit 1
    fi
    ;;
  esac
  # The saved activations in flight peaked where the compiler predicted
  # from the schedule, on every rank.
  grep -q "saved activations in flight.*as the schedule predicts" "$dir/run.log"
  progress "$dir" $((d * k))
  "$bin/bitpipe-compare" --metrics "$dir/metrics.jsonl" "$ref/metrics.jsonl"
  "$bin/bitpipe-compare" --reference "$ref/params/rank0.safetensors" \
    "$dir"/params/rank*.safetensors
  ;;
*)
  echo "usage: $0 reference MODEL N WORKDIR [FLAG...] |" \
    "case MODEL SCHEDULE D K N WORKDIR [--chunks-per-device V]" \
    "[--max-in-flight C] [--recompute MODE] [--units U] [--host-nccl]" \
    "[FLAG...]" >&2
  exit 2
  ;;
esac
