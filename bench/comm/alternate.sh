# Sourced by the side-by-side CPU benchmarks of bench/comm: two ways of
# running one training step, under mpirun on this machine, alternated
# round after round so that the machine's noise falls on both alike.
#
#   comm_setup BUILD WORK   bin, the token file and mpirun's flags
#   alternate NP STEPS ROUNDS A B
#       runs the caller's `command_of LABEL` (which sets the array `cmd`:
#       the executable and its own flags) for A then B in each round,
#       prints each round's median step time past the first two steps
#       (start-up and the first step's allocations), the ratio B / A and
#       the last losses (the same step trains the same losses), then the
#       median ratio. Each run's output is WORK/run-LABEL-ROUND.log.

comm_setup() {
  bin=$1/bin work=$2
  mkdir -p "$work"
  tokens=$work/tokens.bin
  [ -f "$tokens" ] ||
    "$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >/dev/null
  mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
  [ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)
}

# median_seconds METRICS: the median step time past the first two steps,
# and the last loss.
median_seconds() {
  python3 - "$1" <<'PY'
import json, statistics, sys
steps = [json.loads(line) for line in open(sys.argv[1])][2:]
print(f"{statistics.median(s['seconds'] for s in steps):.4f} {steps[-1]['loss']:.6f}")
PY
}

alternate() {
  local np=$1 steps=$2 rounds=$3 a=$4 b=$5 round label metrics ratio
  local -a ratios=()
  local -A secs=() loss=()
  for ((round = 1; round <= rounds; ++round)); do
    for label in "$a" "$b"; do
      command_of "$label"
      metrics=$work/metrics-$label-$round.jsonl
      mpirun "${mpirun_flags[@]}" -np "$np" "${cmd[@]}" --data "$tokens" \
        --steps "$steps" --seed 1 --metrics "$metrics" \
        >"$work/run-$label-$round.log"
      read -r "secs[$label]" "loss[$label]" < <(median_seconds "$metrics")
    done
    ratio=$(python3 -c "print(f'{${secs[$b]} / ${secs[$a]}:.3f}')")
    ratios+=("$ratio")
    echo "round $round: $a ${secs[$a]} s, $b ${secs[$b]} s per step: ratio $ratio (last loss ${loss[$a]} / ${loss[$b]})"
  done
  python3 -c "import sys; r = sorted(sys.argv[2:]); print(f'median ratio {sys.argv[1]}:', r[len(r) // 2])" \
    "$b / $a" "${ratios[@]}"
}
