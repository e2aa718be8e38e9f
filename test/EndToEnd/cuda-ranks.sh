#!/usr/bin/env bash
# The CUDA target across ranks: MODEL compiled with --target cuda
# --precision fp32 for a schedule on D devices x K data-parallel copies (8
# micro-batches per step in all: N = 8 / K per copy), trained 3 AdamW steps
# under mpirun, against ONE rank of the same target and precision (gpipe,
# 8 micro-batches), both loading the same initial checkpoint and reading
# the same data. Ranks may share one GPU: the runtime gives each rank its
# own NCCL_HOSTID and NCCL_SOCKET_IFNAME=lo when they do (docs/launching.md).
#
# What must hold (fp32, no TF32):
#   - loss and gradient norm of every step within 1e-5 relative
#     (bitpipe-compare --metrics);
#   - the ranks together hold every parameter, replicas bit for bit alike
#     (bitpipe-compare, which checks both before any tolerance);
#   - per tensor, the update's error within 1e-5 of the update:
#     ||c - r||_2 <= 1e-5 ||r - init||_2 (cuda-match-params.py
#     --update-rtol 1e-5), the key third of the qkv bias by AdamW's bound.
#     Why not bitpipe-compare's max |c - r| <= 1e-5 max |r|, as the CPU's
#     equivalence.sh uses: on the GPU the two runs add the same gradients in
#     other orders, all in fp32 (a tied embedding's two uses on two ranks;
#     BitPipe's and chimera's replicas, and data-parallel copies, summed by
#     NCCL after each accumulated its own micro-batches; the token
#     embedding's backward adds with atomics, in no fixed order even within
#     one run). The CPU runtime keeps such sums in an order that makes the
#     runs agree to the last bit or nearly; fp32 reordering perturbs a
#     gradient by ~1e-7 of its terms, and AdamW divides each element by its
#     own magnitude, so an element whose gradient is near zero (the key
#     bias: zero in exact arithmetic) moves by its rounding noise, up to lr
#     per step. cuda-match.sh's header measures the same effect between two
#     fp32 implementations. The max-based 1e-5 is printed for the record.
#   - How far apart two runs can be at all: `reference` trains the 1-rank
#     run twice and prints the second against the first (the atomics make
#     them differ); a case's numbers are to be read against that floor.
# The decided bounds are 1e-5; a failure prints by how much
# (worst ratio of its allowance), which is the measurement to act on.
#
#   cuda-ranks.sh init MODEL WORKDIR
#       the initial checkpoint, written by a 1-rank CPU executable (no GPU);
#   cuda-ranks.sh compile MODEL SCHEDULE D K WORKDIR [fp32|bf16]
#       the CUDA executable (no GPU); D=1 K=1 is the reference's;
#   cuda-ranks.sh reference MODEL WORKDIR [--if-device]
#       the 1-rank CUDA run, twice (init and compile first where WORKDIR
#       lacks them; --if-device: skip unless there is a device);
#   cuda-ranks.sh case MODEL SCHEDULE D K WORKDIR [RUN-FLAG...]
#       train D*K ranks and compare with the reference, which must exist;
#       run flags (--shard-optimizer, --cuda-graphs) go to every rank of
#       the same executable, trained in a folder of their own (the case's
#       name with the flags: bitpipe-d2-dp2-shard-optimizer/);
#   cuda-ranks.sh kill MODEL WORKDIR
#       BitPipe on 4 ranks, rank 1 SIGKILLed once training runs: the job
#       must end non-zero within --timeout (10 s) + 20 s (faults.sh's case,
#       on GPUs: a survivor may be waiting inside an NCCL kernel).
# WORKDIR/tokens.bin is the corpus (made if absent); WORKDIR/<model>/ranks/
# holds init.safetensors, ref/, ref-again/ and one folder per case.
#
# NCCL_DEBUG defaults to WARN here, so that a failing NCCL call's reason is
# in the log. BITPIPE_TEST_NCCL_HOSTID=explicit gives each rank its own
# NCCL_HOSTID from this script (a wrapper per rank) instead of leaving it to
# the runtime: to tell a fault of the runtime's arrangement from others.
#
# BITPIPE_BIN: bitpipe-compile (and bitpipe-tokenize) where compiling,
# bitpipe-compare and bitpipe-gpu-probe; BITPIPE_PYTHON: a python3 with
# numpy; mpirun on PATH.
# Exit status: 0 equal; 1 different or a run failed; 2 usage; 77 skipped
# (no usable device, or no mpirun; the reason is printed).
set -euo pipefail
source "$(dirname "$0")/common.sh"
# Open MPI's shared-memory transport copies large messages with
# process_vm_readv, which sandboxes (gVisor) refuse; MPI carries only the
# NCCL id and small control messages here, so its plain copy costs nothing.
mpirun_flags+=(--mca btl_vader_single_copy_mechanism none)
here=$(cd "$(dirname "$0")" && pwd)
steps=3
total_microbatches=8
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# Each rank's command: the executable, or a wrapper that sets NCCL_HOSTID.
rank_command=()
case ${BITPIPE_TEST_NCCL_HOSTID:-} in
"") ;;
explicit)
  rank_command=(bash -c 'NCCL_HOSTID=bitpipe-test-${OMPI_COMM_WORLD_LOCAL_RANK:?} exec "$@"' rank)
  ;;
*)
  echo "cuda-ranks: BITPIPE_TEST_NCCL_HOSTID is 'explicit' or unset, not" \
    "'$BITPIPE_TEST_NCCL_HOSTID'" >&2
  exit 2
  ;;
esac
rtol=1e-5
# The case's run flags (after WORKDIR), given to every rank.
run_flags=()

usage() {
  echo "usage: $0 init MODEL WORKDIR |" \
    "compile MODEL SCHEDULE D K WORKDIR [fp32|bf16] |" \
    "reference MODEL WORKDIR [--if-device] |" \
    "case MODEL SCHEDULE D K WORKDIR [RUN-FLAG...] | kill MODEL WORKDIR" >&2
  exit 2
}

# Exits 77 with the reason when there is no usable device (common.sh's
# require_device) or no mpirun.
require_device_and_mpirun() {
  require_device
  if ! command -v mpirun >/dev/null; then
    echo "SKIPPED: no mpirun on PATH (the multi-rank runs need Open MPI's launcher)"
    exit 77
  fi
}

positive() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
schedule_ok() {
  case $1 in gpipe | 1f1b | interleaved-1f1b | chimera | bitpipe | zb-h1) return 0 ;; esac
  echo "cuda-ranks: unknown schedule '$1' (expected gpipe, 1f1b," \
    "interleaved-1f1b, chimera, bitpipe or zb-h1)" >&2
  return 1
}
# micro-batches per copy: the step's 8 split over K copies.
per_copy() {
  if [ $((total_microbatches % $1)) != 0 ]; then
    echo "cuda-ranks: K=$1 does not divide the step's $total_microbatches" \
      "micro-batches" >&2
    return 1
  fi
  echo $((total_microbatches / $1))
}
case_dir() { echo "$1/$2-d$3-dp$4"; } # RANKS SCHEDULE D K

compile_cuda() { # MODEL SCHEDULE D K DIR PRECISION
  local n
  n=$(per_copy "$4")
  mkdir -p "$5"
  if ! "$bin/bitpipe-compile" "$1" --target cuda --precision "$6" \
    --devices "$3" --dp "$4" --schedule "$2" --microbatches "$n" \
    -o "$5/train"; then
    echo "cuda-ranks: bitpipe-compile --target cuda --precision $6" \
      "--schedule $2 --devices $3 --dp $4 failed for $1 (above)" >&2
    exit 1
  fi
}

# train DIR NP: 3 steps from the shared initial checkpoint.
train() {
  local dir=$1 np=$2
  rm -rf "$dir/params" "$dir/metrics.jsonl"
  local command=("$dir/train")
  [ "$np" = 1 ] || command=("${rank_command[@]}" "$dir/train")
  if ! run "$np" "${command[@]}" --data "$data" --steps "$steps" \
    "${base_flags[@]}" "${run_flags[@]}" --load "$ranks/init.safetensors" \
    --metrics "$dir/metrics.jsonl" --dump-rank-params "$dir/params" \
    2>&1 | tee "$dir/run.log"; then
    echo "cuda-ranks: the run in $dir ($np rank(s)) failed (above)" >&2
    return 1
  fi
}

# compare DIR AGAINST: metrics, coverage and replicas, the update's error.
compare() {
  local dir=$1 ref=$2 status=0
  echo "== losses and gradient norms (within $rtol)"
  "$bin/bitpipe-compare" --metrics --rtol "$rtol" --grad-norm-rtol "$rtol" \
    "$dir/metrics.jsonl" "$ref/metrics.jsonl" || status=1
  echo "== every parameter held, replicas alike (bitpipe-compare; the bound here is loose on purpose)"
  "$bin/bitpipe-compare" --update-from "$ranks/init.safetensors" --rtol 1 \
    --reference "$ref/params/rank0.safetensors" "$dir"/params/rank*.safetensors |
    tail -5 || status=1
  echo "== parameters: the update's error within $rtol of the update"
  "$python" "$here/cuda-match-params.py" --precision fp32 \
    --update-rtol "$rtol" --steps "$steps" --lr 1e-3 \
    --init "$ranks/init.safetensors" \
    --reference "$ref/params/rank0.safetensors" \
    --candidate "$dir"/params/rank*.safetensors || status=1
  echo "== for the record (does not decide): max |c - r| <= $rtol max |r| per tensor"
  "$bin/bitpipe-compare" --rtol "$rtol" \
    --reference "$ref/params/rank0.safetensors" "$dir"/params/rank*.safetensors |
    tail -1 || true
  return $status
}

[ $# -ge 3 ] || usage
mode=$1 model=$2
name=$(basename "$model" .json)
case $mode in
init)
  [ $# -eq 3 ] || usage
  work=$3 ranks=$3/$name/ranks
  mkdir -p "$ranks"
  data=$(tokens "$work")
  # The checkpoint holds the parameters and the seed; a CUDA executable of
  # any partition loads it (docs/training-semantics.md).
  "$bin/bitpipe-compile" "$model" --devices 1 --schedule gpipe \
    --microbatches "$total_microbatches" -o "$ranks/init-cpu"
  run 1 "$ranks/init-cpu" --data "$data" --steps 0 "${base_flags[@]}" \
    --save "$ranks/init.safetensors" >/dev/null
  rm -f "$ranks/init-cpu"
  ;;
compile)
  [ $# -eq 6 ] || [ $# -eq 7 ] || usage
  schedule=$3 d=$4 k=$5 work=$6 precision=${7:-fp32}
  schedule_ok "$schedule" && positive "$d" && positive "$k" || usage
  [ "$precision" = fp32 ] || [ "$precision" = bf16 ] || usage
  ranks=$work/$name/ranks
  if [ "$d$k" = 11 ]; then dir=$ranks/ref; else dir=$(case_dir "$ranks" "$schedule" "$d" "$k"); fi
  [ "$precision" = fp32 ] || dir=$dir-$precision
  compile_cuda "$model" "$schedule" "$d" "$k" "$dir" "$precision"
  ;;
reference)
  [ $# -eq 3 ] || { [ $# -eq 4 ] && [ "$4" = --if-device ]; } || usage
  work=$3 ranks=$3/$name/ranks
  [ "${4:-}" = --if-device ] && require_device_and_mpirun
  [ -f "$ranks/init.safetensors" ] || "$0" init "$model" "$work"
  [ -x "$ranks/ref/train" ] || compile_cuda "$model" gpipe 1 1 "$ranks/ref" fp32
  data=$(tokens "$work")
  train "$ranks/ref" 1
  mkdir -p "$ranks/ref-again"
  cp "$ranks/ref/train" "$ranks/ref-again/train"
  train "$ranks/ref-again" 1 >/dev/null
  echo "== the floor: the same 1-rank run again, against the first (does not decide)"
  compare "$ranks/ref-again" "$ranks/ref" || true
  ;;
case)
  [ $# -ge 6 ] || usage
  schedule=$3 d=$4 k=$5 work=$6
  run_flags=("${@:7}")
  for flag in "${run_flags[@]}"; do
    [[ $flag =~ ^--[a-z][a-z-]*$ ]] || {
      echo "cuda-ranks: a case's run flags are words like --shard-optimizer, not '$flag'" >&2
      usage
    }
  done
  schedule_ok "$schedule" && positive "$d" && positive "$k" || usage
  require_device_and_mpirun
  ranks=$work/$name/ranks ref=$work/$name/ranks/ref
  for f in "$ranks/init.safetensors" "$ref/metrics.jsonl" "$ref/params/rank0.safetensors"; do
    if [ ! -f "$f" ]; then
      echo "cuda-ranks: $f is missing: run '$0 reference $model $work' first" >&2
      exit 1
    fi
  done
  dir=$(case_dir "$ranks" "$schedule" "$d" "$k")
  [ -x "$dir/train" ] || compile_cuda "$model" "$schedule" "$d" "$k" "$dir" fp32
  if [ ${#run_flags[@]} -gt 0 ]; then
    # The same executable, its outputs apart from the plain case's.
    exe=$dir/train
    for flag in "${run_flags[@]}"; do dir+=-${flag#--}; done
    mkdir -p "$dir"
    ln -sfn "$exe" "$dir/train"
  fi
  data=$(tokens "$work")
  status=0
  train "$dir" $((d * k)) || exit 1
  compare "$dir" "$ref" || status=1
  if [ ${#rank_command[@]} = 0 ] && [ -z "${NCCL_HOSTID:-}" ]; then
    # The runtime says when it gives ranks sharing a GPU their
    # own NCCL_HOSTID. Its wording is its own; the name is what is looked
    # for, and only printed (where there is a GPU per rank, it says nothing).
    echo "== for the record (does not decide): the runtime's word on NCCL_HOSTID"
    grep -m2 'NCCL_HOSTID' "$dir/run.log" || echo "(no line names NCCL_HOSTID)"
  fi
  echo "== the run trained (the loss fell, every parameter moved)"
  dumps=("$dir"/params/rank*.safetensors)
  "$python" "$reference_dir/check_progress.py" "$dir/metrics.jsonl" \
    "$ranks/init.safetensors" "${dumps[@]}" || status=1
  if [ "$status" = 0 ]; then
    echo "cuda-ranks: $name $schedule d$d dp$k ${run_flags[*]}: PASS"
  else
    echo "cuda-ranks: $name $schedule d$d dp$k ${run_flags[*]}: FAIL"
  fi
  exit "$status"
  ;;
kill)
  [ $# -eq 3 ] || usage
  work=$3 ranks=$3/$name/ranks
  require_device_and_mpirun
  dir=$(case_dir "$ranks" bitpipe 4 1)
  [ -x "$dir/train" ] || compile_cuda "$model" bitpipe 4 1 "$dir" fp32
  data=$(tokens "$work")
  timeout_s=10 slack_s=20
  log=$ranks/killed.log
  # Every rank runs to its own end (faults.sh says why): the survivors must
  # stop by themselves, not be killed by mpirun.
  timeout -s KILL 150 mpirun "${mpirun_flags[@]}" \
    --mca orte_abort_on_non_zero_status 0 -np 4 "${rank_command[@]}" "$dir/train" \
    --data "$data" --steps 100000 --seed "$seed" --timeout "$timeout_s" \
    >"$log" 2>&1 &
  launcher=$!
  up=""
  for _ in $(seq 1 900); do
    grep -q '^step 1 ' "$log" && { up=1; break; }
    kill -0 $launcher 2>/dev/null || break
    sleep 0.1
  done
  victim=""
  for pid in $(pgrep -f "^$dir/train "); do
    r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
      sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    if [ "$r" = 1 ]; then victim=$pid; fi
  done
  if [ -z "$up" ] || [ -z "$victim" ]; then
    echo "cuda-ranks: kill: the ranks did not come up (step 1 logged:" \
      "${up:-no}; rank 1's pid: '${victim}')" >&2
    tail -20 "$log" >&2
    kill -9 $launcher 2>/dev/null
    wait $launcher 2>/dev/null
    exit 1
  fi
  t0=$(date +%s%N)
  kill -9 "$victim"
  set +e
  wait $launcher
  rc=$?
  set -e
  elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
  # What the survivors said: a line from a rank other than the dead one.
  said=$(grep -E '^bitpipe: rank [023]: ' "$log" | head -3 || true)
  echo "$said"
  # Only the processes of this case, should any be left.
  for pid in $(pgrep -f "^$dir/train "); do kill -9 "$pid" 2>/dev/null || true; done
  # mpirun's own status is the killed rank's (137: signal 9) or a
  # survivor's; a job still running at timeout's 150 s shows in the time.
  if [ $rc = 0 ]; then
    echo "cuda-ranks: kill: FAIL: the job exited 0 ${elapsed_ms} ms after the kill"
    tail -20 "$log"
    exit 1
  elif [ $elapsed_ms -ge $(((timeout_s + slack_s) * 1000)) ]; then
    echo "cuda-ranks: kill: FAIL: exit $rc ${elapsed_ms} ms after the kill," \
      "not within $timeout_s + $slack_s s"
    exit 1
  elif [ -z "$said" ]; then
    echo "cuda-ranks: kill: FAIL: exit $rc, but no surviving rank said why" \
      "(no line 'bitpipe: rank 0|2|3: ...')"
    tail -20 "$log"
    exit 1
  fi
  echo "cuda-ranks: kill: PASS: exit $rc ${elapsed_ms} ms after the kill"
  ;;
*)
  usage
  ;;
esac
