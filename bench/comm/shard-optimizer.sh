#!/usr/bin/env bash
# The sharded optimizer against the whole one, run for real on CPU ranks:
# compile MODEL for SCHEDULE on D devices x K copies once, train it STEPS
# steps under mpirun with and without --shard-optimizer, alternating ROUNDS
# times, and print each round's median step time of each and their ratio
# (sharded / whole), the median ratio, and rank 0's memory line of each run
# (bench/RESULTS.md, "Sharded optimizer on CPU ranks"). Both runs train the
# same step: their last losses are printed side by side.
#
#   bench/comm/shard-optimizer.sh BUILD MODEL SCHEDULE D K N WORKDIR [STEPS] [ROUNDS]
#
# BUILD: the build directory (its bin/ has bitpipe-compile and
# bitpipe-tokenize). All D x K ranks run on this machine.
set -euo pipefail
build=$1 model=$2 schedule=$3 d=$4 k=$5 n=$6 work=$7 steps=${8:-6} rounds=${9:-3}
bin=$build/bin
mkdir -p "$work"
tokens=$work/tokens.bin
[ -f "$tokens" ] ||
  "$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >/dev/null
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)

"$bin/bitpipe-compile" "$model" --schedule "$schedule" --devices "$d" \
  --dp "$k" --microbatches "$n" -o "$work/train" >/dev/null

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
  for mode in whole sharded; do
    flags=()
    [ "$mode" = sharded ] && flags=(--shard-optimizer)
    metrics=$work/metrics-$mode-$round.jsonl
    mpirun "${mpirun_flags[@]}" -np $((d * k)) "$work/train" \
      --data "$tokens" --steps "$steps" --seed 1 --metrics "$metrics" \
      "${flags[@]}" >"$work/run-$mode-$round.log"
    read -r secs[$mode] loss[$mode] < <(median_seconds "$metrics")
  done
  ratio=$(python3 -c "print(f'{${secs[sharded]} / ${secs[whole]}:.3f}')")
  ratios+=("$ratio")
  echo "round $round: whole ${secs[whole]} s, sharded ${secs[sharded]} s per step: ratio $ratio (last loss ${loss[whole]} / ${loss[sharded]})"
done
python3 -c "import sys; r = sorted(sys.argv[1:]); print('median ratio sharded / whole:', r[len(r) // 2])" "${ratios[@]}"
for mode in whole sharded; do
  echo "$mode: $(grep -h '^memory, peak per rank' "$work/run-$mode-1.log" || echo 'no memory line')"
  grep -h '^bitpipe: optimizer: moments' "$work/run-$mode-1.log" || true
done
