#!/usr/bin/env bash
# Flat against two-level gradient sync, run for real on CPU ranks: compile
# MODEL for SCHEDULE on D devices x K copies with --gradient-sync flat and
# hierarchical, train each STEPS steps under mpirun, alternating ROUNDS
# times, and print each round's median step time of each and their ratio
# (hierarchical / flat), then the median ratio (bench/RESULTS.md, "Two-level
# gradient sync on CPU ranks"). Both runs train the same step: their last
# losses are printed side by side.
#
#   bench/comm/gradient-sync.sh BUILD MODEL SCHEDULE D K N WORKDIR [STEPS] [ROUNDS]
#
# BUILD: the build directory (its bin/ has bitpipe-compile and
# bitpipe-tokenize). All D x K ranks run on this machine, so every copy
# shares a node: the two levels have nothing to save here, and the ratio
# is what their extra collectives cost (docs/data-parallel.md, "Two
# levels"); on a cluster the planner's model says what they save.
set -euo pipefail
build=$1 model=$2 schedule=$3 d=$4 k=$5 n=$6 work=$7 steps=${8:-6} rounds=${9:-3}
bin=$build/bin
mkdir -p "$work"
tokens=$work/tokens.bin
[ -f "$tokens" ] ||
  "$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >/dev/null
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)

for sync in flat hierarchical; do
  "$bin/bitpipe-compile" "$model" --schedule "$schedule" --devices "$d" \
    --dp "$k" --microbatches "$n" --gradient-sync "$sync" \
    -o "$work/train-$sync" >/dev/null
done

# median_seconds METRICS: the median step time past the first two steps
# (start-up and the first step's allocations), and the last loss.
median_seconds() {
  python3 - "$1" <<'PY'
import json, statistics, sys
steps = [json.loads(line) for line in open(sys.argv[1])][2:]
print(f"{statistics.median(s['seconds'] for s in steps):.4f} {steps[-1]['loss']:.6f}")
PY
}

ratios=()
for ((round = 1; round <= rounds; ++round)); do
  declare -A secs=() loss=()
  for sync in flat hierarchical; do
    metrics=$work/metrics-$sync-$round.jsonl
    mpirun "${mpirun_flags[@]}" -np $((d * k)) "$work/train-$sync" \
      --data "$tokens" --steps "$steps" --seed 1 --metrics "$metrics" \
      >"$work/run-$sync-$round.log"
    read -r secs[$sync] loss[$sync] < <(median_seconds "$metrics")
  done
  ratio=$(python3 -c "print(f'{${secs[hierarchical]} / ${secs[flat]}:.3f}')")
  ratios+=("$ratio")
  echo "round $round: flat ${secs[flat]} s, hierarchical ${secs[hierarchical]} s per step: ratio $ratio (last loss ${loss[flat]} / ${loss[hierarchical]})"
done
python3 -c "import statistics,sys; print('median ratio hierarchical / flat:', sorted(sys.argv[1:])[len(sys.argv[1:])//2])" "${ratios[@]}"
