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
source "$(dirname "$0")/alternate.sh"
build=$1 model=$2 schedule=$3 d=$4 k=$5 n=$6 steps=${8:-6} rounds=${9:-3}
comm_setup "$build" "$7"

for sync in flat hierarchical; do
  "$bin/bitpipe-compile" "$model" --schedule "$schedule" --devices "$d" \
    --dp "$k" --microbatches "$n" --gradient-sync "$sync" \
    -o "$work/train-$sync" >/dev/null
done

command_of() { cmd=("$work/train-$1"); }
alternate $((d * k)) "$steps" "$rounds" flat hierarchical
