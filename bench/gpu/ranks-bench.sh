#!/usr/bin/env bash
# ranks-bench.sh: the measurements of a multi-rank CUDA run, on the
# GPU machine (bench/gpu/check.sh runs it; bench/RESULTS.md records it):
#
#   1. step time, BitPipe vs 1F1B: two executables of one model on 4 ranks
#      (bench/gpu/gpt-ranks.json, bf16, 8 micro-batches per step, compiled
#      by prepare.sh), run in turn (bitpipe, 1f1b, bitpipe, 1f1b, ... for
#      ROUNDS rounds) so that whatever else the machine does falls on both;
#      per run the median step seconds and tokens/s after 2 warm-up steps,
#      then the median over the rounds;
#   2. from every BitPipe run's Chrome trace (bench/gpu/trace_overlap.py):
#      the fraction of all-reduce time hidden behind compute and the p2p
#      time per step (the median over the rounds), and each bucket's
#      all-reduce time;
#   3. the simulator fitted to each schedule's first GPU trace
#      (bitpipe-calibrate, read from the device rows, docs/calibration.md):
#      the step it predicts for that run, its error, and the error at each
#      rank's own compute speed; with --interleaved EXE (the same model
#      under interleaved 1F1B, 2 chunks per device: BitPipe's 8-stage cut),
#      one traced run of it, fitted to predict BitPipe's held out;
#   4. the same transfers as raw NCCL calls in the same session
#      (bench/gpu/nccl-raw.cpp at the sizes bench/gpu/manifest_sizes.py
#      reads from the BitPipe executable): p2p ping-pong at the activation
#      size, all-reduce of each bucket's size over its group; next to the
#      runtime's time for the same bucket from the trace.
#
#   ranks-bench.sh BITPIPE_EXE ONE_F_ONE_B_EXE TOKENS OUTDIR [--steps N] [--rounds R]
#                  [--interleaved EXE]
#
# The ranks share whatever GPUs there are (node-local rank mod device
# count): on one GPU the four ranks' kernels time-share it, and NCCL goes
# over loopback sockets, so these numbers say how the schedules and the
# runtime's overlap behave, not what four GPUs would do (RESULTS.md).
# BITPIPE_BIN: the folder with nccl-raw (and what test/EndToEnd/common.sh
# needs); BITPIPE_PYTHON: python3. Prints each RANKSBENCH key=value line as
# soon as it is measured, so that a run stopped part way (check.sh's time
# budget) keeps what it got: the step, overlap and p2p lines again after
# each round, with the median over the rounds so far (the last line of each
# kind is the result). Exit status 0, 1 when a run failed, 2 usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../test/EndToEnd/common.sh"
# Open MPI's shared-memory transport copies large messages with
# process_vm_readv, which sandboxes (gVisor) refuse; MPI carries only the
# NCCL id and small control messages here, so its plain copy costs nothing.
mpirun_flags+=(--mca btl_vader_single_copy_mechanism none)
steps=10 rounds=2 interleaved_exe=
# A failing NCCL call's reason in the logs.
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
usage() {
  echo "usage: $0 BITPIPE_EXE ONE_F_ONE_B_EXE TOKENS OUTDIR [--steps N] [--rounds R] [--interleaved EXE]" >&2
  exit 2
}
[ $# -ge 4 ] || usage
bitpipe_exe=$1 onef1b_exe=$2 data=$3 out=$4
shift 4
while [ $# -gt 0 ]; do
  case $1 in
  --steps) [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -ge 4 ] || { echo "--steps wants N >= 4 (2 warm-up steps, then the median)" >&2; exit 2; }; steps=$2; shift 2 ;;
  --rounds) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "--rounds wants N >= 1" >&2; exit 2; }; rounds=$2; shift 2 ;;
  --interleaved) [ -x "${2:-}" ] || { echo "--interleaved wants an executable, got '${2:-}'" >&2; exit 2; }; interleaved_exe=$2; shift 2 ;;
  *) usage ;;
  esac
done
for f in "$bitpipe_exe" "$onef1b_exe"; do
  [ -x "$f" ] || { echo "ranks-bench: $f is not an executable" >&2; exit 2; }
done
[ -f "$data" ] || { echo "ranks-bench: no token file $data" >&2; exit 2; }
mkdir -p "$out"
# The medians are over this run's rounds only.
rm -f "$out"/bitpipe.seconds "$out"/bitpipe.tps "$out"/1f1b.seconds "$out"/1f1b.tps "$out"/bitpipe-*.overlap

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# metric FILE KEY: the values of KEY after the 2 warm-up steps
metric() { sed -n "3,\$s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p" "$1"; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }

gbps() { [ -n "$2" ] && awk -v b="$1" -v us="$2" 'BEGIN { printf "%.2f", b / us / 1e3 }'; } # BYTES US: GB/s

# print_step SCHEDULE: its step time and tokens/s, the median over the
# rounds so far.
print_step() {
  local s t
  s=$(median <"$out/$1.seconds" 2>/dev/null || true)
  t=$(median <"$out/$1.tps" 2>/dev/null || true)
  echo "RANKSBENCH step schedule=$1 seconds=${s:-?} tokens_per_s=${t:-?} rounds=$(wc -l <"$out/$1.seconds" 2>/dev/null || echo 0)"
}

# traces_summaries: the TRACE summary line of each BitPipe trace so far;
# overlap KEY: KEY's median over them (source: the first one's, device or
# host-bound).
traces_summaries() { cat "$out"/bitpipe-*.overlap 2>/dev/null | grep '^TRACE overlap=' || true; }
overlap() {
  local l
  if [ "$1" = source ]; then field "$(traces_summaries | head -1)" source; return; fi
  traces_summaries | while read -r l; do field "$l" "$1"; done | median
}

# print_overlap: from BitPipe's traces so far, the all-reduce time hidden
# behind compute and the p2p time per step.
print_overlap() {
  [ -n "$(traces_summaries)" ] || return 0
  echo "RANKSBENCH overlap fraction=$(overlap overlap) allreduce_ms_per_step=$(overlap allreduce_ms_per_step) exposed_ms_per_step=$(overlap exposed_ms_per_step) source=$(overlap source)"
  echo "RANKSBENCH p2p ms_per_step=$(overlap p2p_ms_per_step) ops_per_step=$(overlap p2p_ops_per_step) source=$(overlap source)"
}

status=0
for ((round = 1; round <= rounds; ++round)); do
  for schedule in bitpipe 1f1b; do
    exe=$bitpipe_exe
    [ "$schedule" = 1f1b ] && exe=$onef1b_exe
    tag=$schedule-$round
    echo "== $tag"
    # Both traced, so that the tracing's cost falls on both alike.
    if ! run 4 "$exe" --data "$data" --steps "$steps" "${base_flags[@]}" \
      --metrics "$out/$tag.jsonl" --trace "$out/$tag.trace.json" \
      >"$out/$tag.log" 2>&1; then
      tail -15 "$out/$tag.log"
      echo "ranks-bench: the $schedule run (round $round) failed (log $out/$tag.log)" >&2
      status=1
      continue
    fi
    tail -3 "$out/$tag.log"
    echo "$(metric "$out/$tag.jsonl" seconds | median)" >>"$out/$schedule.seconds"
    echo "$(metric "$out/$tag.jsonl" tokens_per_s | median)" >>"$out/$schedule.tps"
    print_step "$schedule"
    if [ "$schedule" = bitpipe ]; then
      "$python" "$here/trace_overlap.py" "$out/$tag.trace.json" \
        >"$out/$tag.overlap" || status=1
      tail -1 "$out/$tag.overlap"
      print_overlap
    fi
  done
done

echo "== the simulator fitted to each run's GPU trace (bitpipe-calibrate)"
# One row of bitpipe-calibrate's table, spaces removed: | run | steps |
# measured | predicted | error | bubbles (2) | free all-reduce, free
# communication | scales | error at the run's speed |
table_row() {
  local c=$1
  col() { cut -d'|' -f"$1" <<<"$c"; }
  echo "measured_ms=$(col 4) predicted_ms=$(col 5) error=$(col 6) bubble=$(col 7) predicted_bubble=$(col 8) at_speed_error=$(col 12)"
}
# The executables are D=4, N=8 (prepare.sh); the first 2 steps are warm-up.
if ! "$bin/bitpipe-calibrate" --help >/dev/null 2>&1; then
  # The traces come back in the logs: fit them on the build machine.
  echo "ranks-bench: $bin/bitpipe-calibrate does not run here; the traces are $out/*-1.trace.json" >&2
  status=1
else
  for schedule in bitpipe 1f1b; do
    trace=$out/$schedule-1.trace.json
    [ -f "$trace" ] || continue
    if ! "$bin/bitpipe-calibrate" --fit "$trace:$schedule:4:8" --skip-steps 2 \
      >"$out/$schedule.calibrate" 2>&1; then
      tail -5 "$out/$schedule.calibrate"
      status=1
      continue
    fi
    grep -v '^|' "$out/$schedule.calibrate"
    fitted=$(grep -m1 '(fitted)' "$out/$schedule.calibrate" | tr -d ' ')
    echo "RANKSBENCH calibrate schedule=$schedule $(table_row "$fitted")"
  done
  # Held out: interleaved 1F1B's fit predicts BitPipe's run (round 1).
  if [ -n "$interleaved_exe" ] && [ -f "$out/bitpipe-1.trace.json" ]; then
    if run 4 "$interleaved_exe" --data "$data" --steps "$steps" "${base_flags[@]}" \
      --trace "$out/interleaved.trace.json" >"$out/interleaved.log" 2>&1 &&
      "$bin/bitpipe-calibrate" --skip-steps 2 \
        --fit "$out/interleaved.trace.json:interleaved-1f1b:4:8:2" \
        --check "$out/bitpipe-1.trace.json:bitpipe:4:8" \
        >"$out/heldout.calibrate" 2>&1; then
      cat "$out/heldout.calibrate"
      checked=$(grep -m1 'bitpipe-1.trace.json:bitpipe:4:8 |' "$out/heldout.calibrate" | tr -d ' ')
      echo "RANKSBENCH calibrate heldout=bitpipe fit=interleaved-1f1b $(table_row "$checked")"
    else
      tail -5 "$out/interleaved.log" "$out/heldout.calibrate" 2>/dev/null
      status=1
    fi
  fi
fi

echo "== raw NCCL at the run's sizes"
"$python" "$here/manifest_sizes.py" "$bitpipe_exe" >"$out/sizes.txt" || status=1
raw_args=()
for b in $(sed -n 's/^P2P bytes=//p' "$out/sizes.txt"); do raw_args+=(--p2p "$b"); done
while read -r spec; do raw_args+=(--allreduce "$spec"); done < <(
  sed -n 's/^ALLREDUCE .* bytes=\([0-9]*\) ranks=\(.*\)/\1:\2/p' "$out/sizes.txt" | sort -u)
if [ ! -x "$bin/nccl-raw" ]; then
  echo "ranks-bench: no $bin/nccl-raw (built only with NCCL and MPI)" >&2
  status=1
elif ! run 4 "$bin/nccl-raw" "${raw_args[@]}" >"$out/nccl-raw.log" 2>&1; then
  tail -15 "$out/nccl-raw.log"
  status=1
fi
cat "$out/nccl-raw.log" 2>/dev/null || true

echo "== each bucket and the p2p transfer against raw NCCL"
# Each bucket: the runtime's time (median over ranks and rounds) next to
# raw NCCL's at its size and group.
while read -r line; do
  rank=$(field "$line" rank) bucket=$(field "$line" bucket)
  bytes=$(field "$line" bytes) ranks=$(field "$line" ranks)
  ours=$(cat "$out"/bitpipe-*.overlap 2>/dev/null |
    sed -n "s/^TRACEBUCKET bucket=$bucket rank=$rank us=\([0-9.]*\).*/\1/p" | median || true)
  raw=$(sed -n "s/^NCCLRAW allreduce bytes=$bytes ranks=$ranks us=\([0-9.]*\).*/\1/p" "$out/nccl-raw.log" 2>/dev/null | head -1)
  echo "RANKSBENCH allreduce rank=$rank bucket=$bucket bytes=$bytes ranks=$ranks runtime_us=${ours:-?} runtime_GBps=$(gbps "$bytes" "$ours" || echo '?') raw_us=${raw:-?} raw_GBps=$(gbps "$bytes" "$raw" || echo '?')"
done < <(grep '^ALLREDUCE ' "$out/sizes.txt" 2>/dev/null || true)
p2p_raw=$(sed -n 's/^NCCLRAW p2p bytes=\([0-9]*\) us=\([0-9.]*\) GBps=\([0-9.]*\).*/bytes=\1 raw_us=\2 raw_GBps=\3/p' "$out/nccl-raw.log" 2>/dev/null | head -1)
if [ -n "$(traces_summaries)" ] && [ -n "$p2p_raw" ]; then
  # The runtime's time per transfer: its p2p time per step over the number
  # of sends and receives. With source=device that time is the p2p
  # stream's busy time (the union of its spans; a batch's transfers share
  # one span), so this is the stream's time per transfer, batches
  # included; with source=host-bound (traces without device spans) it is
  # the host's time in the calls and waits, which includes waiting for the
  # peer to get there: an upper bound on the transfer's time.
  per_op=$(awk -v ms="$(overlap p2p_ms_per_step)" -v n="$(overlap p2p_ops_per_step)" 'BEGIN { if (n > 0) printf "%.1f", 1000 * ms / n }')
  echo "RANKSBENCH p2p $p2p_raw runtime_us_per_op=${per_op:-?} source=$(overlap source)"
fi
exit $status
