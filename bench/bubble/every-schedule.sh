#!/usr/bin/env bash
# bench-bubble for every schedule at one D: compile MODEL for each, train
# STEPS steps under mpirun with --trace, and print bench-bubble's measured
# bubbles and step next to the simulator's (bench/RESULTS.md, "Every
# schedule run for real on CPU ranks at D=4").
#
#   bench/bubble/every-schedule.sh BUILD MODEL D N WORKDIR [STEPS]
#
# BUILD: the build directory (its bin/ has bitpipe-compile, bitpipe-tokenize
# and bench-bubble). Schedules: every registry name, interleaved-1f1b with
# v=2, and 1f1b with max-in-flight=D/2 (docs/schedules.md). One run each:
# on a machine with fewer cores than D the ranks share them, and a rank
# waiting for a core is measured as bubble.
set -euo pipefail
build=$1 model=$2 d=$3 n=$4 work=$5 steps=${6:-4}
bin=$build/bin
mkdir -p "$work"
tokens=$work/tokens.bin
[ -f "$tokens" ] ||
  "$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >/dev/null
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)

# label|schedule flags
cases=(
  "gpipe|--schedule gpipe"
  "1f1b|--schedule 1f1b"
  "1f1b max-in-flight=$((d / 2))|--schedule 1f1b --max-in-flight $((d / 2))"
  "interleaved-1f1b v=2|--schedule interleaved-1f1b --chunks-per-device 2"
  "chimera|--schedule chimera"
  "bitpipe|--schedule bitpipe"
  "bitpipe-periodic|--schedule bitpipe-periodic"
  "zb-h1|--schedule zb-h1"
  "bitpipe-zb|--schedule bitpipe-zb"
  "bitpipe-periodic-zb|--schedule bitpipe-periodic-zb"
  "zbv|--schedule zbv"
)
for c in "${cases[@]}"; do
  label=${c%%|*}
  read -r -a flags <<<"${c#*|}"
  dir=$work/$(echo "$label" | tr ' =' '--')
  mkdir -p "$dir"
  "$bin/bitpipe-compile" "$model" --devices "$d" --microbatches "$n" \
    "${flags[@]}" -o "$dir/train"
  mpirun "${mpirun_flags[@]}" -np "$d" "$dir/train" --data "$tokens" \
    --steps "$steps" --trace "$dir/trace.json" >"$dir/run.log"
  echo "== $label"
  "$bin/bench-bubble" --trace "$dir/trace.json" --devices "$d" \
    --microbatches "$n" "${flags[@]}"
done
