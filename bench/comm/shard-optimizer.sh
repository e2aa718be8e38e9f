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
source "$(dirname "$0")/alternate.sh"
build=$1 model=$2 schedule=$3 d=$4 k=$5 n=$6 steps=${8:-6} rounds=${9:-3}
comm_setup "$build" "$7"

"$bin/bitpipe-compile" "$model" --schedule "$schedule" --devices "$d" \
  --dp "$k" --microbatches "$n" -o "$work/train" >/dev/null

command_of() {
  cmd=("$work/train")
  [ "$1" = sharded ] && cmd+=(--shard-optimizer)
  return 0
}
alternate $((d * k)) "$steps" "$rounds" whole sharded
for mode in whole sharded; do
  echo "$mode: $(grep -h '^memory, peak per rank' "$work/run-$mode-1.log" || echo 'no memory line')"
  grep -h '^bitpipe: optimizer: moments' "$work/run-$mode-1.log" || true
done
