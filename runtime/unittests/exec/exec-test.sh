#!/usr/bin/env bash
# exec-test.sh CASE BINDIR MPIEXEC
#
# End-to-end tests of the executor: the fake compiled programs (FakeModel.h,
# FakePrograms.cpp) run under mpirun like real compiled models, and their
# outputs are compared (ExecTestTool). One CASE per ctest test; each runs in
# a fresh temporary directory, removed on success.
#
# Equivalence cases: every configuration trains on the same 4 micro-batches
# per step, so after 3 steps its loss per step and every rank's copy of
# every parameter must equal the one-process run's (1e-5 relative: only the
# order of floating-point sums differs). Resume cases must be bit-exact.
# Fault cases: a clear message, a non-zero exit, and output files that were
# there before (sentinels) untouched.
set -u
case_name="$1"; bin="$2"; mpiexec="$3"
tool="$bin/ExecTestTool"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bitpipe-exec-XXXXXX")
# Open MPI's session directories under $tmp: side-by-side jobs sharing
# /tmp/ompi.<host>.<uid> race when one removes it (test/EndToEnd/common.sh).
mpirun=("$mpiexec" --allow-run-as-root --oversubscribe
  --mca orte_tmpdir_base "$tmp")
status=0

fail() { echo "FAIL: $*"; status=1; }
finish() {
  if [ "$status" -eq 0 ]; then rm -rf "$tmp"; echo "PASS: $case_name";
  else echo "(files kept in $tmp)"; fi
  exit "$status"
}

# run NP PROGRAM ARGS...: mpirun, output to $tmp/out.txt (and the log).
run() {
  local np="$1" prog="$2"; shift 2
  timeout 120 "${mpirun[@]}" -np "$np" "$bin/$prog" "$@" >"$tmp/out.txt" 2>&1
  local rc=$?
  cat "$tmp/out.txt"
  echo "[exit code $rc: mpirun -np $np $prog $*]"
  return $rc
}
must_run() { run "$@" || { fail "$2 exited non-zero"; finish; }; }
same_tensors() { "$tool" compare-tensors "$@" >/dev/null || fail "compare-tensors $*"; }
same_metrics() { "$tool" compare-metrics "$@" || fail "compare-metrics $*"; }

"$tool" make-data "$tmp/data.bin" 4000 32 || { fail "make-data"; finish; }
common=(--data "$tmp/data.bin" --lr 0.01 --seed 5)

# equivalent NP PROGRAM REFERENCE [FLAGS...]: PROGRAM on NP ranks and
# REFERENCE (one rank) train 3 steps; losses and every rank's parameters
# must agree.
equivalent() {
  local np="$1" prog="$2" ref="$3"; shift 3
  must_run 1 "$ref" "${common[@]}" --steps 3 "$@" \
    --metrics "$tmp/ref.jsonl" --dump-rank-params "$tmp/ref"
  must_run "$np" "$prog" "${common[@]}" --steps 3 "$@" \
    --metrics "$tmp/run.jsonl" --dump-rank-params "$tmp/run"
  same_metrics "$tmp/ref.jsonl" "$tmp/run.jsonl" 1e-5
  for r in $(seq 0 $((np - 1))); do
    same_tensors "$tmp/ref/rank0.safetensors" "$tmp/run/rank$r.safetensors" 1e-5
  done
  # The parameters moved: a no-op executor must not pass.
  if "$tool" compare-tensors "$tmp/ref/rank0.safetensors" \
       "$tmp/init/rank0.safetensors" 0 >/dev/null 2>&1; then
    fail "parameters did not change in training"
  fi
}
initial() { must_run 1 FakeSingle "${common[@]}" --steps 0 --dump-rank-params "$tmp/init"; }

# Fault cases. sentinels: output files that exist before the run and must
# be byte-identical after it.
make_sentinels() {
  mkdir -p "$tmp/out/dump"
  for f in ckpt.safetensors metrics.jsonl trace.json dump/rank0.safetensors; do
    echo "sentinel $f" >"$tmp/out/$f"
  done
  outputs=(--save "$tmp/out/ckpt.safetensors" --metrics "$tmp/out/metrics.jsonl"
           --trace "$tmp/out/trace.json" --dump-rank-params "$tmp/out/dump")
}
check_sentinels() {
  for f in ckpt.safetensors metrics.jsonl trace.json dump/rank0.safetensors; do
    [ "$(head -c 100 "$tmp/out/$f" | tr -d '\0')" = "sentinel $f" ] || fail "$f was overwritten"
  done
  local extra
  extra=$(find "$tmp/out" -type f | grep -v -E 'ckpt.safetensors$|metrics.jsonl$|trace.json$|dump/rank0.safetensors$')
  [ -z "$extra" ] || fail "stray files left: $extra"
}
# expect_failure NP PROGRAM REGEX ARGS...: exits non-zero, says REGEX.
expect_failure() {
  local np="$1" prog="$2" regex="$3"; shift 3
  make_sentinels
  # The case's own flags last: they win over the sentinels' (fault-output-dir).
  run "$np" "$prog" "${outputs[@]}" "$@"
  local rc=$?
  [ "$rc" -ne 0 ] || fail "exited 0"
  [ "$rc" -ne 124 ] || fail "hung"
  grep -Eq -- "$regex" "$tmp/out.txt" || fail "no line matches /$regex/"
  check_sentinels
}

case "$case_name" in
pipeline)      # (a) 1 rank vs a 2-rank pipeline
  initial; equivalent 2 FakePipe2 FakeSingle ;;
data-parallel) # (b) 2 data-parallel copies of 2 micro-batches vs 1 rank of 4
  initial; equivalent 2 FakeDp2 FakeSingle ;;
pipeline-dp)   # 2 copies of the 2-rank pipeline (overlapping groups)
  # Two rank programs run by 4 world ranks (program.h): each copy's stages
  # talk to each other (0<->1, 2<->3; the trace names world ranks), and the
  # all-reduces span the copies (the embedding's all 4 ranks: the result
  # equals the one-rank run's).
  initial; equivalent 4 FakePipe2Dp2 FakeSingle
  must_run 4 FakePipe2Dp2 "${common[@]}" --steps 1 --trace "$tmp/trace.json"
  /usr/bin/python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
seen = set()
for e in events:
    words = e["name"].split()
    if e.get("cat") in ("send", "recv") and len(words) == 3:
        me, peer = e["pid"], int(words[1][1:])
        assert (peer // 2, peer % 2) == (me // 2, 1 - me % 2), (me, e["name"])
        seen.add((me, words[0], peer))
want = {(0, "send", 1), (1, "recv", 0), (1, "send", 0), (0, "recv", 1),
        (2, "send", 3), (3, "recv", 2), (3, "send", 2), (2, "recv", 3)}
assert seen == want, sorted(seen)' "$tmp/trace.json" ||
    fail "the copies do not talk to their own pipeline peers" ;;
pipeline-dp-hierarchical) # two-level gradient sums (docs/data-parallel.md)
  # pipeline-dp's programs under "gradient_sync": "hierarchical": the
  # embedding's group (pipeline ranks 0 and 1, two copies) sums by a
  # reduce-scatter in each copy, an all-reduce of each shard across the
  # copies and an all-gather; the group of pipeline rank 0 alone stays
  # flat. Over MPI, and over the NCCL communicator on the stand-in under
  # NCCL's rules and loose ones (the fake device): the
  # one-rank run's result, and every replica of a parameter the same bits.
  initial
  same_replicas() {
    same_tensors "$tmp/run/rank0.safetensors" "$tmp/run/rank2.safetensors" 0
    same_tensors "$tmp/run/rank1.safetensors" "$tmp/run/rank3.safetensors" 0
    same_tensors "$tmp/run/rank0.safetensors" "$tmp/run/rank1.safetensors" 0
  }
  equivalent 4 FakePipe2Dp2Hierarchical FakeSingle
  same_replicas
  base=("${mpirun[@]}")
  for rules in 1 loose; do
    mpirun=("${base[@]}" -x BITPIPE_FAKE_DEVICE_NCCL=$rules)
    equivalent 4 FakeDevicePipe2Dp2Hierarchical FakeSingle
    same_replicas
  done
  # World rank 3 stuck before its sums in step 2: the others time out on
  # a step of the two-level sum of group 0 (the communicator's group 1),
  # never on a flat all-reduce.
  for prog in FakePipe2Dp2Hierarchical FakeDevicePipe2Dp2Hierarchical; do
    mpirun=("${base[@]}" -x BITPIPE_FAKE_DEVICE_NCCL=1 -x BITPIPE_FAKE_STALL=3)
    start=$(date +%s)
    run 4 "$prog" "${common[@]}" --steps 3 --timeout 3
    rc=$?
    [ "$rc" -ne 0 ] || fail "$prog: a stuck peer's group exited 0"
    [ "$rc" -ne 124 ] || fail "$prog: hung instead of timing out"
    [ $(( $(date +%s) - start )) -le 60 ] || fail "$prog: took too long to stop"
    grep -Eq 'rank [0-2]: timeout after 3.0 s waiting for hierarchical allreduce over group 1 \(ranks 0,1,2,3, 512 x f64\), step [12] of 3: (reduce-scatter within the copy|allreduce across copies) over group' \
      "$tmp/out.txt" || fail "$prog: no timeout naming the step of the two-level sum"
  done
  mpirun=("${base[@]}") ;;
bert)          # masked-LM data: the two stages' ranks agree on the masks
  initial; equivalent 2 FakeBertPipe2 FakeBertSingle ;;
clipping)      # global norm over unique parameters across ranks
  initial; equivalent 2 FakePipe2 FakeSingle --max-grad-norm 0.05 ;;
resume)        # (c) save -> load -> continue == uninterrupted, bit for bit
  must_run 1 FakeSingle "${common[@]}" --steps 4 --save "$tmp/full.safetensors" \
    --metrics "$tmp/full.jsonl"
  must_run 1 FakeSingle "${common[@]}" --steps 2 --save "$tmp/half.safetensors" \
    --metrics "$tmp/resumed.jsonl"
  # No --seed: the checkpoint's seed is used.
  must_run 1 FakeSingle --data "$tmp/data.bin" --lr 0.01 --steps 4 \
    --load "$tmp/half.safetensors" --save "$tmp/resumed.safetensors" \
    --metrics "$tmp/resumed.jsonl"
  grep -q '"step":3' "$tmp/resumed.jsonl" || fail "the resumed run did not start at step 3"
  same_tensors "$tmp/full.safetensors" "$tmp/resumed.safetensors" 0 \
    --same-set --meta step --meta seed --meta fingerprint
  same_metrics "$tmp/full.jsonl" "$tmp/resumed.jsonl" 0 ;;
resume-pipeline) # the whole-model file written by 2 ranks resumes on 1, and back
  must_run 1 FakeSingle "${common[@]}" --steps 4 --save "$tmp/full.safetensors"
  must_run 2 FakePipe2 "${common[@]}" --steps 2 --save "$tmp/half.safetensors"
  must_run 1 FakeSingle --data "$tmp/data.bin" --lr 0.01 --steps 4 \
    --load "$tmp/half.safetensors" --save "$tmp/resumed.safetensors"
  # The moments of near-zero gradients differ in absolute terms only.
  same_tensors "$tmp/full.safetensors" "$tmp/resumed.safetensors" 1e-5 \
    --atol 1e-8 --same-set --meta step --meta fingerprint
  must_run 1 FakeSingle "${common[@]}" --steps 2 --save "$tmp/half1.safetensors"
  must_run 4 FakePipe2Dp2 --data "$tmp/data.bin" --lr 0.01 --steps 4 \
    --load "$tmp/half1.safetensors" --save "$tmp/resumed4.safetensors"
  same_tensors "$tmp/full.safetensors" "$tmp/resumed4.safetensors" 1e-5 \
    --atol 1e-8 --same-set --meta step --meta fingerprint ;;
outputs)       # log line, metrics, trace, help
  must_run 2 FakePipe2 "${common[@]}" --steps 2 --trace "$tmp/trace.json" \
    --metrics "$tmp/m.jsonl" --log-interval 1
  grep -Eq 'step 2 \| loss [0-9.]+ \| [0-9]+ tok/s \| [0-9.]+ s \| lr [0-9.e-]+ \| bubble r0 [0-9.]+ r1 [0-9.]+' \
    "$tmp/out.txt" || fail "no step line with per-rank bubbles"
  [ "$(wc -l <"$tmp/m.jsonl")" -eq 2 ] || fail "metrics should have 2 lines"
  grep -q '"tokens_per_s"' "$tmp/m.jsonl" || fail "metrics lack tokens_per_s"
  for ev in '"F3.s0"' '"B3.s1"' '"W3.s1"' '"B0.s0"' 'send r1 t0' 'recv r0 t0' \
            'allreduce b0' 'optimizer' '"pid":1'; do
    grep -q "$ev" "$tmp/trace.json" || fail "trace lacks $ev"
  done
  # The whole-model checkpoint, as numpy / PyTorch's safetensors reads it.
  must_run 2 FakePipe2 "${common[@]}" --steps 1 --save "$tmp/c.safetensors"
  if command -v python3 >/dev/null; then
    python3 "$(dirname "$0")/check-safetensors.py" "$tmp/c.safetensors" \
      format step seed fingerprint || fail "checkpoint not readable as safetensors"
    for t in embed.tokens optim.m.hidden.weight optim.v.hidden.bias; do
      grep -aq "\"$t\"" "$tmp/c.safetensors" || fail "checkpoint lacks $t"
    done
  fi
  must_run 1 FakeSingle --help
  grep -q -- '--dump-rank-params' "$tmp/out.txt" || fail "--help lacks the flags" ;;
fault-world-size)   # (d) wrong rank count
  expect_failure 1 FakePipe2 'compiled for 2 ranks, started with 1: run with mpirun -np 2' \
    "${common[@]}" --steps 2
  expect_failure 4 FakeDp2 'compiled for 2 ranks, started with 4: run with mpirun -np 2' \
    "${common[@]}" --steps 2
  # One program per world rank (version 2's layout), not per pipeline rank.
  expect_failure 4 FakePipe2Dp2WorldPrograms 'the compiled program is inconsistent: 6 stage entries and 4 rank programs \(bitpipe_num_ranks\), but its manifest lists 6 functions and 2 pipeline ranks \(schedule.devices\)' \
    "${common[@]}" --steps 2 ;;
fake-device)    # the CUDA backend's bookkeeping on a fake device (FakeDeviceBackend.cpp)
  # fp32 accumulators and the kernels' AdamW arithmetic: the CPU's run to
  # 1e-5; only the inputs, the losses and the norm cross the "bus"; a
  # checkpoint moves both ways between the two.
  must_run 1 FakeSingle "${common[@]}" --steps 3 --metrics "$tmp/ref.jsonl" \
    --dump-rank-params "$tmp/ref" --save "$tmp/cpu.safetensors"
  timeout 120 "${mpirun[@]}" -np 1 -x BITPIPE_FAKE_DEVICE_LOG="$tmp/bus.txt" \
    "$bin/FakeDeviceSingle" "${common[@]}" --steps 3 --metrics "$tmp/run.jsonl" \
    --dump-rank-params "$tmp/run" --save "$tmp/dev.safetensors" \
    --trace "$tmp/trace.json" >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "FakeDeviceSingle exited non-zero"; finish; }
  same_metrics "$tmp/ref.jsonl" "$tmp/run.jsonl" 1e-5
  same_tensors "$tmp/ref/rank0.safetensors" "$tmp/run/rank0.safetensors" 1e-5
  # 4 micro-batches of 2 x 8 tokens: tokens and labels in (8 x 64 bytes),
  # 4 losses and 1 norm out, waits before the optimizer and at the end,
  # F0 F1 B1 B0 per micro-batch, whose backwards add their parameter
  # gradients into the accumulators themselves, and the accumulators zeroed
  # once, after the optimizer step.
  for step in 1 2 3; do
    grep -qx "step $step inputs 8 input_bytes 512 losses 4 norms 1 syncs 2 stage_calls 16 zeroings 1" "$tmp/bus.txt" \
      || fail "step $step: not what should cross the bus: $(cat "$tmp/bus.txt")"
  done
  [ "$(grep -o '"cat":"device"' "$tmp/trace.json" | wc -l)" -eq 48 ] \
    || fail "the trace does not hold one device span per stage call"
  # Before the first step, each of the model's six stage functions once
  # (Executor::warmUp; stage 1's backward both whole and in halves),
  # outside the trace and the steps' counts, and without changing a number
  # of the run (the metrics and weights above match the CPU's, which does
  # not warm up): the gradients its backwards added are zeroed after it.
  grep -qx "warm-up stage_calls 6 zeroings 1" "$tmp/bus.txt" \
    || fail "not one warm-up call per stage function: $(head -2 "$tmp/bus.txt")"
  grep -q '^bitpipe: warm-up: 6 stage calls in [0-9.]* s before the first step$' "$tmp/out.txt" \
    || fail "no warm-up line: $(head -5 "$tmp/out.txt")"
  # --dump-rank-params and --save read the store back (2 downloads); the
  # initial weights are drawn on the device: nothing is uploaded.
  grep -qx "store downloads 2 uploads 0" "$tmp/bus.txt" \
    || fail "not the store copies a dump and a save make: $(tail -2 "$tmp/bus.txt")"
  grep -q '^bitpipe: start-up [0-9.]* s to the first step (parameters initialised on the target in [0-9.]* s)$' "$tmp/out.txt" \
    || fail "no start-up time: $(head -3 "$tmp/out.txt")"
  # A run that neither loads nor saves copies no part of the store: drawn
  # and checked on the device.
  timeout 120 "${mpirun[@]}" -np 1 -x BITPIPE_FAKE_DEVICE_LOG="$tmp/bus-plain.txt" \
    "$bin/FakeDeviceSingle" "${common[@]}" --steps 2 >"$tmp/out-plain.txt" 2>&1 \
    || { cat "$tmp/out-plain.txt"; fail "FakeDeviceSingle (no outputs) exited non-zero"; }
  grep -qx "store downloads 0 uploads 0" "$tmp/bus-plain.txt" \
    || fail "a run without outputs copied the store: $(tail -2 "$tmp/bus-plain.txt")"
  must_run 1 FakeSingle "${common[@]}" --steps 4 --load "$tmp/dev.safetensors"
  grep -q "resumed from $tmp/dev.safetensors at step 3" "$tmp/out.txt" || fail "the CPU did not resume from the device's checkpoint"
  timeout 120 "${mpirun[@]}" -np 1 "$bin/FakeDeviceSingle" "${common[@]}" --steps 4 \
    --load "$tmp/cpu.safetensors" >"$tmp/out.txt" 2>&1 || fail "the device did not resume from the CPU's checkpoint"
  grep -q "resumed from $tmp/cpu.safetensors at step 3" "$tmp/out.txt" || fail "the device did not say it resumed" ;;
fault-target)   # a program compiled for another target than the linked one
  expect_failure 1 FakeCudaTarget 'the program was compiled for the cuda target, but this executable links the cpu runtime: link it with runtime-cuda.rsp' \
    "${common[@]}" --steps 2 ;;
fault-flags)
  expect_failure 1 FakeSingle "unknown flag '--bogus'" "${common[@]}" --steps 2 --bogus
  expect_failure 1 FakeSingle "flag --steps: 'x' is not a non-negative integer" \
    "${common[@]}" --steps x
  expect_failure 1 FakeSingle "missing --data" --steps 2
  expect_failure 1 FakeSingle "flag --data-dtype: 'u8' is not u16 or u32" \
    "${common[@]}" --steps 2 --data-dtype u8 ;;
fault-data)
  expect_failure 2 FakePipe2 "cannot open token file '$tmp/missing.bin'" \
    --data "$tmp/missing.bin" --steps 2
  "$tool" make-data "$tmp/short.bin" 5 32
  expect_failure 2 FakePipe2 "token file '$tmp/short.bin' is too short: it has 5 tokens, one sample needs 9" \
    --data "$tmp/short.bin" --steps 2
  "$tool" make-data "$tmp/bad.bin" 4000 32 1234
  expect_failure 2 FakePipe2 "token 32 at position 1234 is not below the vocabulary size 32" \
    --data "$tmp/bad.bin" --steps 2 ;;
fault-checkpoint)
  must_run 1 FakeSingle "${common[@]}" --steps 1 --save "$tmp/good.safetensors"
  head -c 3000 "$tmp/good.safetensors" >"$tmp/truncated.safetensors"
  expect_failure 2 FakePipe2 "--load: safetensors file '$tmp/truncated.safetensors'.*(truncated|past the end|beyond)" \
    "${common[@]}" --steps 2 --load "$tmp/truncated.safetensors"
  expect_failure 2 FakePipe2 "--load: cannot open safetensors file '$tmp/none.safetensors'" \
    "${common[@]}" --steps 2 --load "$tmp/none.safetensors"
  "$tool" other-model-checkpoint "$tmp/other.safetensors"
  expect_failure 2 FakePipe2 "it was written for model fingerprint [0-9a-f]+, but this model's fingerprint is" \
    "${common[@]}" --steps 2 --load "$tmp/other.safetensors"
  expect_failure 1 FakeSingle "was trained with seed 5, but --seed is 6" \
    --data "$tmp/data.bin" --seed 6 --steps 2 --load "$tmp/good.safetensors" ;;
fault-nonfinite) # docs/training-semantics.md, "Non-finite values"
  # The loss is on rank 1 only (the last stage); rank 0 holds the first
  # parameter: both stop at step 2 (--lr 1e30: the first update reaches
  # 1e31, the second forward overflows), and nothing is saved. --metrics
  # goes elsewhere: it is written as training goes.
  expect_failure 2 FakePipe2 "^bitpipe: rank 0: error: step 2: the loss is not finite and the global gradient norm is -?nan; the first parameter \(in model order\) that went non-finite is 'embed.tokens' .*training stops" \
    "${common[@]}" --lr 1e30 --steps 5 --metrics "$tmp/metrics.jsonl"
  # The metrics stay JSON: the non-finite step's loss and norm are null.
  /usr/bin/python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["step"] for l in lines] == [1, 2], lines
assert lines[1]["loss"] is None and lines[1]["grad_norm"] is None, lines[1]
assert isinstance(lines[0]["loss"], float), lines[0]' "$tmp/metrics.jsonl" ||
    fail "metrics of the non-finite step are not JSON with null loss and norm"
  # A transient NaN gradient (hidden.bias, step 2's first backward on rank
  # 0) is named precisely; with --skip-nonfinite-steps that step changes
  # nothing: 2 steps with step 2 skipped end where 1 step ends.
  BITPIPE_FAKE_NAN_BACKWARD=5 expect_failure 2 FakePipe2 "^bitpipe: rank 0: error: step 2: the global gradient norm is -?nan; the first parameter \(in model order\) that went non-finite is 'hidden.bias' \(tensor 'hidden.bias' element 0 is -?nan, expected a finite value\)" \
    "${common[@]}" --steps 4 --metrics "$tmp/metrics.jsonl"
  BITPIPE_FAKE_NAN_BACKWARD=5 must_run 2 FakePipe2 "${common[@]}" --steps 2 \
    --skip-nonfinite-steps 1 --dump-rank-params "$tmp/skipped"
  grep -q "^bitpipe: warning: step 2: the global gradient norm is -\?nan: its update is skipped (1 in a row, at most 1 with --skip-nonfinite-steps; 1 in all)" \
    "$tmp/out.txt" || fail "no warning for the skipped step"
  grep -q "^bitpipe: 1 of 2 steps skipped their update" "$tmp/out.txt" ||
    fail "no count of skipped steps"
  must_run 2 FakePipe2 "${common[@]}" --steps 1 --dump-rank-params "$tmp/one"
  for r in 0 1; do
    same_tensors "$tmp/one/rank$r.safetensors" "$tmp/skipped/rank$r.safetensors" 0
  done
  # Skipping gives up after K in a row: --lr 1e30 diverges for good.
  expect_failure 2 FakePipe2 "^bitpipe: rank 0: error: step 4: the loss is not finite and the global gradient norm is -?nan after 2 skipped updates in a row \(--skip-nonfinite-steps 2\); the first parameter" \
    "${common[@]}" --lr 1e30 --steps 9 --skip-nonfinite-steps 2 --metrics "$tmp/metrics.jsonl"
  # A checkpoint with a NaN is refused on load; the run saves nothing.
  must_run 1 FakeSingle "${common[@]}" --steps 1 --save "$tmp/good.safetensors"
  /usr/bin/python3 "$(dirname "$0")/../../../test/EndToEnd/spoil-checkpoint.py" \
    "$tmp/good.safetensors" "$tmp/nan.safetensors" nan-weight hidden.bias
  expect_failure 2 FakePipe2 "^bitpipe: rank 0: error: --load: checkpoint '$tmp/nan.safetensors': tensor 'hidden.bias' element 0 is nan, expected a finite value" \
    "${common[@]}" --steps 2 --load "$tmp/nan.safetensors" --metrics "$tmp/metrics.jsonl" ;;
fault-output-dir)
  expect_failure 1 FakeSingle "--save: '$tmp/nodir/c.safetensors' cannot be created: directory '$tmp/nodir' does not exist" \
    "${common[@]}" --steps 1 --save "$tmp/nodir/c.safetensors" ;;
fault-program) # a miscompiled rank program: one rank's fatal stops both
  start=$(date +%s)
  BITPIPE_FAKE_BUG=1 run 2 FakePipe2 "${common[@]}" --steps 2 --timeout 20
  rc=$?
  [ "$rc" -ne 0 ] || fail "exited 0"
  [ $(( $(date +%s) - start )) -le 15 ] || fail "the other rank was not stopped promptly"
  grep -q "bitpipe: rank 0: fatal: step 1: release of value 0: value 0 holds nothing (released twice, or never defined)" \
    "$tmp/out.txt" || fail "no fatal message naming the step, call and value"
  # Peers are pipeline ranks (program.h): 2 is none with 2 of them.
  BITPIPE_FAKE_BAD_PEER=2 run 2 FakePipe2 "${common[@]}" --steps 2 --timeout 20
  [ $? -ne 0 ] || fail "a send to pipeline rank 2 of 2 exited 0"
  grep -q "bitpipe: rank 0: fatal: step 1: send of value 1 to pipeline rank 2 (tag 0): peer 2 is not a pipeline rank (below schedule.devices 2)" \
    "$tmp/out.txt" || fail "no fatal message naming the peer that is no pipeline rank" ;;
fake-nccl)      # the executor's NCCL path (comm/nccl) on the fake device
  # Under NCCL's rules (HostNcclCalls.h, strict: rendezvous sends, groups
  # as units, each communicator's units in order), on a stream per channel:
  # channels connected at start-up, batches as groups posted at their end,
  # transfers matched in posting order, device waits and their drain, host
  # memory over MPI. A pipeline and a pipeline of two data-parallel copies
  # match the one-rank run, also under --shard-optimizer.
  mpirun+=(-x BITPIPE_FAKE_DEVICE_NCCL=1)
  equivalent 2 FakeDevicePipe2 FakeSingle
  equivalent 4 FakeDevicePipe2Dp2 FakeSingle
  # The sharded optimizer on the CUDA target's books (FakeDeviceBackend.cpp,
  # cuda/backend/SegmentTable.h): compact moments, flat and in two levels,
  # then compact master weights whose stage-function copy is all-gathered
  # (the bf16 copy's role on CUDA); each equals the one-rank run.
  equivalent 4 FakeDevicePipe2Dp2 FakeSingle --shard-optimizer
  equivalent 4 FakeDevicePipe2Dp2Hierarchical FakeSingle --shard-optimizer
  base=("${mpirun[@]}")
  mpirun+=(-x BITPIPE_FAKE_DEVICE_COMPACT_MASTER=1)
  equivalent 4 FakeDevicePipe2Dp2Hierarchical FakeSingle --shard-optimizer
  # Its checkpoint holds whole weights and moments (gathered from the
  # owners' parts); loaded, each rank keeps its parts, and the third step
  # lands where the one-rank run's does.
  must_run 4 FakeDevicePipe2Dp2Hierarchical "${common[@]}" --steps 2 \
    --shard-optimizer --save "$tmp/sharded.safetensors"
  must_run 4 FakeDevicePipe2Dp2Hierarchical "${common[@]}" --steps 3 \
    --shard-optimizer --load "$tmp/sharded.safetensors" \
    --dump-rank-params "$tmp/resumed"
  grep -q "resumed from $tmp/sharded.safetensors at step 2" "$tmp/out.txt" \
    || fail "the sharded run did not resume from its checkpoint"
  for r in 0 1 2 3; do
    same_tensors "$tmp/ref/rank0.safetensors" "$tmp/resumed/rank$r.safetensors" 1e-5
  done
  mpirun=("${base[@]}") ;;
nccl-rules)     # the stand-in's strict rules matter (FAKE_PIPE2_CROSSED)
  # Each rank sends in one batch, then receives in the next, crossed with
  # the other's. With buffered sends (MPI itself, or the stand-in's loose
  # rules) it runs; on one shared stream under NCCL's rules each send waits
  # for a receive queued behind the other rank's send: a timeout naming the
  # waiting receive and its peer, and a non-zero exit, fast. On a stream
  # per channel it runs under NCCL's rules too. The NCCL runs are the CPU
  # target with the NCCL communicator (HostNcclTarget.cpp).
  initial
  equivalent 2 FakePipe2Crossed FakeSingle
  base=("${mpirun[@]}")
  mpirun=("${base[@]}" -x BITPIPE_FAKE_NCCL=loose)
  equivalent 2 FakeNcclPipe2CrossedShared FakeSingle
  mpirun=("${base[@]}" -x BITPIPE_FAKE_NCCL=strict)
  start=$(date +%s)
  run 2 FakeNcclPipe2CrossedShared "${common[@]}" --steps 2 --timeout 5
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  [ "$rc" -ne 0 ] || fail "the crossed batches on one stream ran under NCCL's rules"
  [ "$rc" -ne 124 ] || fail "the deadlock hung instead of timing out"
  [ "$elapsed" -le 60 ] || fail "the deadlock took $elapsed s to stop"
  grep -Eq 'rank [01]: timeout after 5.0 s waiting for recv with rank [01] \(tag [0-9]+' \
    "$tmp/out.txt" || fail "no timeout naming the waiting receive and its peer"
  equivalent 2 FakeNcclPipe2CrossedChannel FakeSingle
  # An unknown word is refused, naming the variable.
  mpirun=("${base[@]}" -x BITPIPE_FAKE_NCCL=lax)
  expect_failure 2 FakeNcclPipe2CrossedChannel "BITPIPE_FAKE_NCCL='lax': expected strict \(or 1: NCCL's rules\) or loose" \
    "${common[@]}" --steps 1 ;;
dead-rank)     # (e) a rank dies mid-step; the survivor must stop, fast
  for variant in default survivor-timeout; do
    extra=()
    [ "$variant" = survivor-timeout ] && extra=(--mca orte_abort_on_non_zero_status 0)
    start=$(date +%s)
    timeout 90 "${mpirun[@]}" "${extra[@]}" -np 2 -x BITPIPE_FAKE_KILL=1:2 \
      "$bin/FakePipe2" "${common[@]}" --steps 4 --timeout 3 >"$tmp/out.txt" 2>&1
    rc=$?
    elapsed=$(( $(date +%s) - start ))
    cat "$tmp/out.txt"
    echo "[$variant: exit code $rc after $elapsed s]"
    [ "$rc" -ne 0 ] || fail "$variant: exited 0"
    [ "$rc" -ne 124 ] || fail "$variant: hung"
    [ "$elapsed" -le 45 ] || fail "$variant: took $elapsed s"
    grep -q 'kills itself in step 2' "$tmp/out.txt" || fail "$variant: the rank did not die"
    if [ "$variant" = survivor-timeout ]; then
      grep -Eq 'rank 0: timeout after 3.0 s waiting for recv with rank 1' "$tmp/out.txt" \
        || fail "survivor did not time out on its receive"
      grep -Eq 'rank 0: fatal: step 2: .*receive from rank 1' "$tmp/out.txt" \
        || fail "no fatal message naming the step and the receive"
    fi
  done ;;
*) fail "unknown case $case_name" ;;
esac
finish
