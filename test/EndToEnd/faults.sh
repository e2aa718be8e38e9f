#!/usr/bin/env bash
# Faults of a compiled executable (gpt-tiny, BitPipe, 2 ranks): each must end
# with a message that says what is wrong, from a rank that names itself, a
# non-zero exit of the job and of every rank on its own, and overwrite
# nothing. A rank killed mid-step must not leave the others hanging: the
# survivor stops within its communication timeout and names the dead peer.
#
#   faults.sh WORKDIR        (BITPIPE_BIN: the build's bin directory)
set -uo pipefail
bin=${BITPIPE_BIN:?set BITPIPE_BIN to the bin directory of the build}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1/faults
rm -rf "$work" && mkdir -p "$work"
# mpirun's flags, fail, literal and expect_failure (fault-helpers.sh).
source "$root/test/EndToEnd/fault-helpers.sh"

set -e
"$bin/bitpipe-tokenize" -o "$work/tokens.bin" /usr/share/common-licenses/* >/dev/null
"$bin/bitpipe-compile" "$root/examples/gpt-tiny.json" --devices 2 \
  --schedule bitpipe --microbatches 4 -o "$work/gpt"
"$bin/bitpipe-compile" "$root/examples/bert-tiny.json" --devices 2 \
  --schedule bitpipe --microbatches 4 -o "$work/bert"
run=(mpirun "${mpirun_flags[@]}" -np 2)
# A good checkpoint, and a file that no failed run may touch.
"${run[@]}" "$work/gpt" --data "$work/tokens.bin" --steps 1 --save "$work/good.safetensors" >/dev/null
cp "$work/good.safetensors" "$work/keep.safetensors"
# What the checkpoint's own header says (safetensors: an 8-byte
# little-endian header length, then the JSON header with __metadata__).
header_len=$(od -An -t u8 -N8 "$work/good.safetensors" | tr -d ' ')
fingerprint=$(head -c $((8 + header_len)) "$work/good.safetensors" |
  grep -ao '"fingerprint":"[0-9a-f]\{16\}"' | cut -d'"' -f4)
[ -n "$header_len" ] && [ -n "$fingerprint" ]
set +e

# The start-up errors: every rank checks, the ranks agree, and the lowest
# failing rank reports; both ranks hold stage 0 (BitPipe, D=2) and read the
# data and the checkpoint, so rank 0 always does.
expect_failure wrong-rank-count 1 \
  "bitpipe: rank 0: error: compiled for 2 ranks, started with 1: run with mpirun -np 2" \
  "$work/gpt" --data "$work/tokens.bin" --steps 1
expect_failure missing-data 2 \
  "bitpipe: rank 0: error: --data: cannot open token file '$w/nonexistent\.bin': No such file or directory" \
  "$work/gpt" --data "$work/nonexistent.bin" --steps 1 --save "$work/keep.safetensors"
# 40 bytes of u16 are 20 tokens; a sample of gpt-tiny (sequence length 32)
# needs 33, the inputs and the next-token targets.
head -c 40 "$work/tokens.bin" >"$work/short.bin"
expect_failure short-data 2 \
  "bitpipe: rank 0: error: --data: token file '$w/short\.bin' is too short: it has 20 tokens, one sample needs 33 \(sequence length 32 \+ 1\)" \
  "$work/gpt" --data "$work/short.bin" --steps 1 --save "$work/keep.safetensors"
# The first 5000 bytes: the 8-byte length, then 4992 of the header_len bytes
# of JSON header that length announces.
head -c 5000 "$work/good.safetensors" >"$work/corrupt.safetensors"
expect_failure corrupt-checkpoint 2 \
  "bitpipe: rank 0: error: --load: safetensors file '$w/corrupt\.safetensors': truncated: the header needs $header_len bytes but the file has 4992 after the length" \
  "$work/gpt" --data "$work/tokens.bin" --steps 2 \
  --load "$work/corrupt.safetensors" --save "$work/keep.safetensors"
# gpt-tiny's checkpoint for bert-tiny: the fingerprint the file carries (its
# __metadata__) against bert-tiny's, which differs (other parameters).
expect_failure other-model-checkpoint 2 \
  "bitpipe: rank 0: error: --load: checkpoint '$w/good\.safetensors': it was written for model fingerprint $fingerprint, but this model's fingerprint is [0-9a-f]{16} \(another model, or another partition of it\)" \
  "$work/bert" --data "$work/tokens.bin" --steps 2 \
  --load "$work/good.safetensors" --save "$work/keep.safetensors"
if grep -q "model's fingerprint is $fingerprint " "$work/other-model-checkpoint.log"; then
  fail other-model-checkpoint "bert-tiny has gpt-tiny's fingerprint $fingerprint" \
    "$work/other-model-checkpoint.log"
fi
if cmp -s "$work/good.safetensors" "$work/keep.safetensors"; then
  echo "ok   nothing-overwritten: keep.safetensors unchanged"
else
  fail nothing-overwritten "keep.safetensors changed"
fi

# A rank killed mid-run: the survivor must stop with an error within its
# communication timeout (--timeout 10), not hang. The clock starts at the
# kill, once both ranks are up and training (rank 0 has logged step 1), so
# start-up on an oversubscribed 2-core machine does not count. Bound: the
# 10 s timeout, plus 15 s for the survivor to reach its next wait (a step
# takes about 0.1 s here), print, abort, and for mpirun to collect the job.
timeout_s=10
slack_s=15
log=$work/killed.log
timeout -s KILL 120 mpirun "${mpirun_flags[@]}" "${own_end[@]}" -np 2 \
  "$work/gpt" --data "$work/tokens.bin" --steps 100000 \
  --timeout $timeout_s >"$log" 2>&1 &
launcher=$!
up=""
for _ in $(seq 1 600); do
  grep -q '^step 1 ' "$log" && { up=1; break; }
  kill -0 $launcher 2>/dev/null || break
  sleep 0.1
done
# The two ranks' processes, told apart by the rank Open MPI gives them.
victim="" survivor=""
for pid in $(pgrep -f "^$work/gpt "); do
  r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
    sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
  case $r in 0) survivor=$pid ;; 1) victim=$pid ;; esac
done
if [ -z "$up" ] || [ -z "$victim" ] || [ -z "$survivor" ]; then
  fail killed-rank "the ranks did not come up (step 1 logged: ${up:-no}, rank 0 pid '${survivor}', rank 1 pid '${victim}')" "$log"
  kill -9 $launcher 2>/dev/null
  wait $launcher 2>/dev/null
else
  t0=$(date +%s%N)
  kill -9 "$victim"
  wait $launcher
  rc=$?
  elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
  # The survivor's communicator times out on whatever it waits for from
  # rank 1: a receive from it, or a collective of a group it belongs to.
  # The operation is one of the communicator's ("recv", "allreduce",
  # "gather (sizes)", ...), whichever the survivor was in.
  timeout_line="bitpipe: rank 0: timeout after $timeout_s\.0 s waiting for [a-z_]+( \([a-z ]+\))? (with rank 1 |over group [0-9]+ \(ranks ([0-9]+,)*1[,)]).*; the peer may have died or be stuck"
  fatal_line="bitpipe: rank 0: fatal: .*rank 0: timeout after $timeout_s\.0 s waiting for .*"
  if [ $rc -eq 0 ]; then
    fail killed-rank "exited 0" "$log"
  elif [ $elapsed_ms -ge $(((timeout_s + slack_s) * 1000)) ]; then
    fail killed-rank "exit $rc ${elapsed_ms} ms after the kill, not within $timeout_s + $slack_s s" "$log"
  elif ! grep -Eqx "$timeout_line" "$log"; then
    fail killed-rank "exit $rc, but no line is /$timeout_line/" "$log"
  elif ! grep -Eqx "$fatal_line" "$log"; then
    fail killed-rank "exit $rc, but no line is /$fatal_line/" "$log"
  else
    echo "ok   killed-rank: exit $rc ${elapsed_ms} ms after the kill: $(grep -Exm1 "$timeout_line" "$log")"
  fi
fi
# Only the two processes this case started, should either still be there.
for pid in $victim $survivor; do
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
done

echo "faults: $failures failure(s)"
[ $failures -eq 0 ]
