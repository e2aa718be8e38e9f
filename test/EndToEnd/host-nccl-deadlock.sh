#!/usr/bin/env bash
# One NCCL stream per rank (--transfer-streams shared: every transfer of a
# rank on one stream, a batch between two compute steps) on a schedule it
# deadlocks under NCCL's rules: interleaved 1F1B, D = 4, N = 8
# (docs/nccl-transfers.md). The check names it, and the strict MPI stand-in
# for NCCL shows it is real:
#   - compiled with the check under NCCL's rules, it is refused with the cycle;
#   - compiled without the check and linked with the NCCL communicator over
#     the strict stand-in, the ranks wait on each other until --timeout,
#     then stop with a non-zero exit that names the wait;
#   - the same programs linked with the CPU runtime (MPI) train;
#   - on one stream per channel (the default) they train under the strict
#     stand-in.
#
#   host-nccl-deadlock.sh MODEL WORKDIR
#     (BITPIPE_BIN; BITPIPE_HOST_NCCL_LINK: the host NCCL runtime link file)
set -uo pipefail
source "$(dirname "$0")/common.sh"
model=$1 work=$2/host-nccl-deadlock
link=${BITPIPE_HOST_NCCL_LINK:?set BITPIPE_HOST_NCCL_LINK}
rm -rf "$work" && mkdir -p "$work"
status=0
fail() { echo "FAIL: $*"; status=1; }
compile=("$bin/bitpipe-compile" "$model" --devices 4 --schedule interleaved-1f1b
  --microbatches 8)
data=$(tokens "$work")
train_flags=(--data "$data" --steps 1 --seed "$seed" --lr 1e-3)
# The stand-in's rules, exported to every rank.
export BITPIPE_FAKE_NCCL=strict
mpirun_flags+=(-x BITPIPE_FAKE_NCCL)

# 1. Refused by the check under NCCL's rules, naming the cycle.
if "${compile[@]}" --transfer-streams shared --nccl-rules \
  --runtime-link "$link" -o "$work/refused" >"$work/refused.log" 2>&1; then
  fail "the shared layout compiled under NCCL's rules"
fi
grep -q "deadlock under nccl's rules (transfers on shared streams)" \
  "$work/refused.log" || fail "no deadlock named: $(cat "$work/refused.log")"
grep -q "a cycle of" "$work/refused.log" || fail "no cycle named"
[ ! -e "$work/refused" ] || fail "an executable was written"

# 2. Compiled without the check: the strict stand-in stops it at --timeout.
"${compile[@]}" --transfer-streams shared --runtime-link "$link" \
  -o "$work/shared" || { fail "compiling the shared layout"; exit 1; }
start=$(date +%s)
run 4 "$work/shared" "${train_flags[@]}" \
  --timeout 10 >"$work/strict.log" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
cat "$work/strict.log"
[ "$rc" -ne 0 ] || fail "the deadlocking program exited 0 under the strict rules"
grep -Eq "timeout after 10\.0 s waiting for (send|recv) with rank [0-9]+" \
  "$work/strict.log" || fail "the timeout does not name the wait"
[ "$elapsed" -lt 100 ] || fail "the job took ${elapsed} s to stop"

# 3. MPI's rules (the CPU runtime) run the same programs.
"${compile[@]}" --transfer-streams shared -o "$work/mpi" ||
  fail "compiling the shared layout for MPI"
run 4 "$work/mpi" "${train_flags[@]}" --timeout 60 >"$work/mpi.log" 2>&1 ||
  fail "MPI: $(cat "$work/mpi.log")"

# 4. One stream per channel trains under the strict rules.
"${compile[@]}" --nccl-rules --runtime-link "$link" -o "$work/channel" ||
  fail "compiling the channel layout"
run 4 "$work/channel" "${train_flags[@]}" \
  --timeout 60 >"$work/channel.log" 2>&1 || fail "channel: $(cat "$work/channel.log")"

[ "$status" -eq 0 ] && echo "PASS: host-nccl-deadlock"
exit "$status"
