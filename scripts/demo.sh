#!/usr/bin/env bash
# The main job: installs what is missing, builds bitpipe, and runs the demo on
# the GPT of examples/gpt-demo.json (15 layers, so that 8 pipeline chunks of
# 2 layers balance: one chunk holds the embedding too, one the output head).
# Outputs go to ./out/demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}
out=${BITPIPE_DEMO_DIR:-$root/out/demo}
model=$root/examples/gpt-demo.json

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
mkdir -p "$out"
bin=$build/bin

echo "== 1. import: examples/gpt-demo.json -> $out/gpt.mlir"
"$bin/bitpipe-import" gpt --config "$model" -o "$out/gpt.mlir"

echo "== 2. cost analysis (per micro-batch)"
"$bin/bitpipe-opt" "$out/gpt.mlir" --bitpipe-annotate-cost=print-summary \
  -o "$out/gpt.cost.mlir"

echo "== 3. BitPipe on 4 devices, 8 micro-batches: partition, backward, placement, schedule"
"$bin/bitpipe-opt" "$out/gpt.cost.mlir" \
  --bitpipe-partition="chunks=8 print" \
  --bitpipe-generate-backward \
  --bitpipe-place="placement=bidirectional-v devices=4" \
  --bitpipe-schedule="schedule=bitpipe microbatches=8" \
  -o "$out/gpt.sched.mlir"

echo "== 4. the per-rank order and a simulated step (times from the FLOP counts at 50 GFLOP/s, in ms)"
"$bin/bitpipe-opt" "$out/gpt.sched.mlir" \
  --bitpipe-simulate="grid costs=ir tflops=0.05 timeline=$out/bitpipe.svg trace=$out/bitpipe.trace.json" \
  -o /dev/null

echo "== 5. the same model under 1F1B, for comparison"
"$bin/bitpipe-opt" "$out/gpt.cost.mlir" \
  --bitpipe-partition="chunks=4" --bitpipe-generate-backward \
  --bitpipe-place="placement=loop devices=4" \
  --bitpipe-schedule="schedule=1f1b microbatches=8" \
  --bitpipe-simulate="costs=ir tflops=0.05 timeline=$out/1f1b.svg" -o /dev/null

echo
echo "== 6. the complete program: transfers, bucketed all-reduce, 2 data-parallel copies"
"$bin/bitpipe-opt" "$out/gpt.mlir" \
  --bitpipe-pipeline="devices=4 microbatches=8 schedule=bitpipe dp=2" \
  -o "$out/gpt.program.mlir"
echo "rank 0's program begins (all 8 programs: $out/gpt.program.mlir):"
# awk, not head: head would exit early and, with pipefail, the SIGPIPE of
# sed would end the demo.
sed -n '/bitpipe.program @rank0 /,/^  }/p' "$out/gpt.program.mlir" | awk 'NR <= 16' | cut -c1-150
echo "    ..."
sed -n '/bitpipe.program @rank0 /,/^  }/p' "$out/gpt.program.mlir" | tail -6 | cut -c1-150

echo
echo "== 7. compile it: BitPipe on 4 ranks, 8 micro-batches -> $out/gpt_train"
"$bin/bitpipe-compile" "$model" --devices 4 --schedule bitpipe \
  --microbatches 8 -o "$out/gpt_train"

echo "== 8. the corpus: Debian's license texts (base-files) as byte tokens"
"$bin/bitpipe-tokenize" -o "$out/licenses.tokens" /usr/share/common-licenses/*

cores=$(nproc)
steps=${BITPIPE_DEMO_STEPS:-300}
echo "== 9. train for $steps steps on 4 ranks (mpirun, CPU, OpenBLAS)"
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)
if [ "$cores" -lt 4 ]; then
  echo "   (this machine has $cores cores: the 4 ranks take turns on them, so this"
  echo "   run shows training, not speed; its bubbles measure the sharing)"
fi
mpirun "${mpirun_flags[@]}" -np 4 "$out/gpt_train" \
  --data "$out/licenses.tokens" --steps "$steps" --lr 3e-3 --log-interval 20 \
  --trace "$out/train.trace.json" --metrics "$out/train.metrics.jsonl" \
  --save "$out/gpt-demo.safetensors"
loss() { sed -n "$1"'s/.*"step":\([0-9]*\),"loss":\([0-9.]*\).*/step \1: \2/p' "$out/train.metrics.jsonl"; }
echo "loss: $(loss 1)  ->  $(loss '$')"

# The schedules side by side, each rank on a core of its own: as many
# ranks as this machine has cores, at most 4 (BitPipe needs an even count).
ranks=$((cores >= 4 ? 4 : 2))
rounds=${BITPIPE_DEMO_COMPARE_ROUNDS:-4}
echo
echo "== 10. BitPipe next to 1F1B, really run: $ranks ranks on $cores cores, same model and data, 8 micro-batches;"
echo "   $rounds rounds of 10 steps, the two schedules taking turns so that both see the same machine"
for schedule in bitpipe 1f1b; do
  "$bin/bitpipe-compile" "$model" --devices "$ranks" --schedule "$schedule" \
    --microbatches 8 -o "$out/compare_$schedule"
done
for ((round = 1; round <= rounds; ++round)); do
  for schedule in bitpipe 1f1b; do
    mpirun "${mpirun_flags[@]}" -np "$ranks" "$out/compare_$schedule" \
      --data "$out/licenses.tokens" --steps 10 --log-interval 10 \
      --metrics "$out/compare_$schedule.$round.metrics.jsonl" >/dev/null
  done
done
for schedule in bitpipe 1f1b; do
  printf '   %-8s' "$schedule"
  python3 "$root/scripts/metrics-summary.py" "$out"/compare_$schedule.*.metrics.jsonl
done
echo "   The bubble is the time each rank waits (transfers, dependencies), measured"
echo "   from the run's own trace. Both schedules compute the same training step,"
echo "   so their losses are equal. On $cores CPU cores a small model's numbers are"
echo "   noisy (another process on the machine shows in them); speed is measured"
echo "   on the GPU machine (bench/RESULTS.md)."

echo
echo "Pictures: $out/bitpipe.svg, $out/1f1b.svg (open in a browser);"
echo "traces: $out/bitpipe.trace.json (simulated), $out/train.trace.json (the"
echo "real run; open in https://ui.perfetto.dev); trained model:"
echo "$out/gpt-demo.safetensors; loss per step: $out/train.metrics.jsonl."
