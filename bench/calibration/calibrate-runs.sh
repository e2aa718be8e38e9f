#!/usr/bin/env bash
# The simulator fitted to a real run and checked on held-out ones
# (docs/calibration.md; bench/RESULTS.md, "Calibration on real runs").
#
#   bench/calibration/calibrate-runs.sh BUILD WORKDIR [MODEL] [STEPS]
#
# Compiles MODEL (default bench/train-step/gpt-cpu-medium.json) for D=2 under
# several schedules, trains each STEPS steps (default 4) under mpirun with
# --trace, then asks bitpipe-calibrate to fit the cost model to one run and
# predict the others: 1F1B N=8 for the 2-stage schedules (GPipe, Chimera,
# 1F1B N=16), interleaved 1F1B v=2 N=8 for the 4-stage ones (BitPipe N=8 and
# 16, interleaved N=16), with the all-reduce time from Chimera N=8; and says
# what the 4-stage runs' ranks did when not computing (--idle). Two ranks on
# this 2-core machine: one core each.
set -euo pipefail
build=$1 work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${3:-$root/bench/train-step/gpt-cpu-medium.json}
steps=${4:-4}
bin=$build/bin
mkdir -p "$work"
tokens=$work/tokens.bin
[ -f "$tokens" ] ||
  "$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >/dev/null
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)

# name schedule N [chunks]
run() {
  local name=$1 schedule=$2 n=$3 v=${4:-}
  local extra=()
  [ -n "$v" ] && extra=(--chunks-per-device "$v")
  "$bin/bitpipe-compile" "$model" --devices 2 --schedule "$schedule" \
    --microbatches "$n" "${extra[@]}" -o "$work/$name" >/dev/null
  mpirun "${mpirun_flags[@]}" -np 2 "$work/$name" --data "$tokens" \
    --steps "$steps" --log-interval "$steps" --trace "$work/$name.json" \
    >"$work/$name.log" 2>&1
  echo "ran $name" >&2
}

run 1f1b-n8 1f1b 8
run gpipe-n8 gpipe 8
run chimera-n8 chimera 8
run 1f1b-n16 1f1b 16
run interleaved-n8 interleaved-1f1b 8 2
run bitpipe-n8 bitpipe 8
run bitpipe-n16 bitpipe 16
run interleaved-n16 interleaved-1f1b 16 2

# The all-reduce time comes from Chimera N=8 (at D=2 its all-reduces, like
# BitPipe's, are between the two ranks): held out for BitPipe.
echo "## 2 stages: fitted on 1F1B N=8, all-reduce from Chimera N=8"
"$bin/bitpipe-calibrate" --fit "$work/1f1b-n8.json:1f1b:2:8" \
  --allreduce-from "$work/chimera-n8.json:chimera:2:8" --spread 500 \
  --check "$work/gpipe-n8.json:gpipe:2:8" \
  --check "$work/chimera-n8.json:chimera:2:8" \
  --check "$work/1f1b-n16.json:1f1b:2:16"
echo
echo "## 4 stages: fitted on interleaved 1F1B v=2 N=8, all-reduce from Chimera N=8"
"$bin/bitpipe-calibrate" --fit "$work/interleaved-n8.json:interleaved-1f1b:2:8:2" \
  --allreduce-from "$work/chimera-n8.json:chimera:2:8" --idle 3 --spread 500 \
  --check "$work/bitpipe-n8.json:bitpipe:2:8" \
  --check "$work/bitpipe-n16.json:bitpipe:2:16" \
  --check "$work/interleaved-n16.json:interleaved-1f1b:2:16:2"
