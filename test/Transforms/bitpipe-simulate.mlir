// The programs below, as written (not regenerated from the schedule's name).
// RUN: bitpipe-opt %s --bitpipe-simulate=grid | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-simulate | FileCheck %s --check-prefix=IR

// Summaries of generated schedules, unit costs F=1, B=2, free communication
// (docs/bitpipe-order.md's makespans), with bitpipe-annotate-cost for memory.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-simulate -o /dev/null | FileCheck %s --check-prefix=BP4
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=8" --bitpipe-simulate -o /dev/null | FileCheck %s --check-prefix=BP8
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-simulate -o /dev/null | FileCheck %s --check-prefix=1F1B
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-simulate="ar-latency=2" -o /dev/null | FileCheck %s --check-prefix=AR
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir" -o /dev/null | FileCheck %s --check-prefix=COSTIR

// Files, written atomically by the library's exporters.
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir tflops=6.4e-8" -o /dev/null | FileCheck %s --check-prefix=COSTIR
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=zb-h1 microbatches=2" --bitpipe-simulate="costs=ir trace=%t.zb.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=ZB --input-file=%t.zb.json
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir cluster=%examples/clusters/cpu-dev.json" -o /dev/null | FileCheck %s --check-prefix=CLUSTER
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-annotate-cost --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4 dp=8" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce --bitpipe-simulate="costs=ir cluster=%examples/clusters/a100-4x8.json" -o /dev/null | FileCheck %s --check-prefix=TWO-LEVEL
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-annotate-cost --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4 dp=8" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce=sync=flat --bitpipe-simulate="costs=ir cluster=%examples/clusters/a100-4x8.json" -o /dev/null | FileCheck %s --check-prefix=FLAT
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="cluster=%examples/clusters/cpu-dev.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLUSTER-UNIT
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir tflops=1 cluster=%examples/clusters/cpu-dev.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLUSTER-TFLOPS
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir cluster=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLUSTER-MISSING
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-simulate="costs=ir cluster=%examples/clusters/cpu-dev.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLUSTER-SIZE
// RUN: rm -rf %t && mkdir -p %t
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-simulate="timeline=%t/bitpipe.svg trace=%t/bitpipe.json torch-csv=%t/bitpipe.csv" -o /dev/null
// RUN: FileCheck %s --check-prefix=SVG --input-file=%t/bitpipe.svg
// RUN: FileCheck %s --check-prefix=TRACE --input-file=%t/bitpipe.json
// RUN: FileCheck %s --check-prefix=CSV --input-file=%t/bitpipe.csv
// RUN: not ls %t/bitpipe.svg.tmp
// Milliseconds: the picture is scaled to its own time range, not to unit
// slots, and says its unit.
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-annotate-cost --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir tflops=6.4e-5 timeline=%t/ms.svg" -o /dev/null | FileCheck %s --check-prefix=MS
// RUN: FileCheck %s --check-prefix=SVG-MS --input-file=%t/ms.svg

// Two ranks, two stages, named 1f1b but hand-written in GPipe order (both
// forwards first on rank 1): the simulator measures the IR's order.
// CHECK:      P0: F0.s0 F1.s0 B0.s0 B1.s0{{$}}
// CHECK-NEXT: P1: F0.s1 F1.s1 B0.s1 B1.s1{{$}}
// CHECK-NEXT: schedule 1f1b: 2 devices, loop placement, 2 stages, 2 micro-batches, costs=unit

// P0: F0 [0,1] F1 [1,2], B0 [5,7] B1 [7,9]; P1: F0 [1,2] F1 [2,3] B0 [3,5]
// B1 [5,7]. Each rank is busy 6 of 9. Rank 1 holds two activations at once
// (1F1B would hold one). Each rank sends two 2x4x8xf32 tensors (256 bytes):
// rank 0 activations, rank 1 gradients.
// IR:      makespan: 9
// IR-NEXT: bubble ratio: 0.3333
// IR-NEXT: rank     busy   bubble  in-flight    act-bytes   sent-bytes    ar-time  ar-hidden
// IR-NEXT:   P0        6   0.3333          2            0          512          0          0
// IR-NEXT:   P1        6   0.3333          2            0          512          0          0
// IR-NEXT: bytes sent: 1024
// IR-NEXT: all-reduce: time 0 units, overlap 1.0000

module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>,
  bitpipe.world_size = 2 : i64
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %f0 = forward(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %f1 = forward(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%f0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
    backward(%f1) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %f0 = forward(%l0) stage 1 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %f1 = forward(%l1) stage 1 microbatch 1 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%f0) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    backward(%f1) stage 1 microbatch 1 : (!bitpipe.saved) -> ()
    optimizer_step
  }
}

// BitPipe, D=4, N=4: 28 slots; bubble (D-2)/(3N+D-2) = 2/14. Each rank runs
// 8 F and 8 B (24 busy). Peak in-flight: 7 forwards before rank 0's first
// backward; rank 0 then holds s0 x2 (embedding: 32 bytes of tokens each),
// s3, s4 x2 (256 each) and s7 (864: logits, labels and the rows' max and
// log-sum) = 1952 bytes; ranks
// 1, 2 hold eight middle-stage activations (8 x 256). Rank 0 sends 8
// activations/gradients of 256 bytes (the V-bottom hand-offs are local);
// ranks 1 and 2 send 16.
// BP4:      schedule bitpipe: 4 devices, bidirectional-v placement, 8 stages, 4 micro-batches, costs=unit
// BP4-NEXT: makespan: 28
// BP4-NEXT: bubble ratio: 0.1429
// BP4-NEXT: rank     busy   bubble  in-flight    act-bytes   sent-bytes    ar-time  ar-hidden
// BP4-NEXT:   P0       24   0.1429          7         1952         2048          0          0
// BP4-NEXT:   P1       24   0.1429          8         2048         4096          0          0
// BP4-NEXT:   P2       24   0.1429          8         2048         4096          0          0
// BP4-NEXT:   P3       24   0.1429          7         1952         2048          0          0
// BP4-NEXT: bytes sent: 12288
// BP4-NEXT: all-reduce: time 0 units, overlap 1.0000

// D=4, N=8: 54 slots (docs/bitpipe-order.md); 48 busy per rank.
// BP8:      makespan: 54
// BP8-NEXT: bubble ratio: 0.1111
// BP8:        P0       48   0.1111
// Unit costs give every stage's forward one slot: BitPipe's 8 half-size
// stages are not 1F1B's 4, and the summary says so.
// BP8: time unit: one slot per forward of any stage, whatever its size (f-cost, b-cost, w-cost); makespans compare only between schedules with the same 8 stages; the bubble ratio compares any two, costs=ir their times

// 1F1B, D=4, N=4: (N+D-1)(F+B) = 21; bubble (D-1)/(N+D-1) = 3/7.
// 1F1B:      makespan: 21
// 1F1B-NEXT: bubble ratio: 0.4286
// 1F1B-NEXT: rank
// 1F1B-NEXT:   P0       12   0.4286          4            0         1024
// 1F1B-NEXT:   P1       12   0.4286          3            0         2048
// 1F1B-NEXT:   P2       12   0.4286          2            0         2048
// 1F1B-NEXT:   P3       12   0.4286          1            0         1024

// Each all-reduce takes 2. Ranks 0 and 3 start AR(4,7) at 24, while B1.s0
// (or B3.s0) still runs, and AR(0,3) at 28, after their last compute;
// ranks 1 and 2 finish compute at 26 and run both after it. The step ends
// at 30; 4 of the 16 all-reduce slots hide behind compute.
// AR:      makespan: 30
// AR-NEXT: bubble ratio: 0.2000
// AR-NEXT: rank
// AR-NEXT:   P0       24   0.2000          7            0         2048          4          2
// AR-NEXT:   P1       24   0.2000          8            0         4096          4          0
// AR-NEXT:   P2       24   0.2000          8            0         4096          4          0
// AR-NEXT:   P3       24   0.2000          7            0         2048          4          2
// AR-NEXT: bytes sent: 12288
// AR-NEXT: all-reduce: time 8 units, overlap 0.2500

// costs=ir on two stages: stage 0 (embedding) F 64 / B 128 FLOPs, stage 1
// (linear 16x8 + cross-entropy) F 2560 / B 4352. In units of the cheapest
// forward: F0=1 B0=2 F1=40 B1=68. In 1F1B order P1 runs F0 [1,41] B0 [41,109]
// F1 [109,149] B1 [149,217]; P0's last backward B1.s0 ends at 219.
// With tflops=6.4e-8 a millisecond is 6.4e-8 * 1e9 = 64 FLOPs, the cheapest
// forward again: the same numbers, now in milliseconds.
// COSTIR:      schedule 1f1b: 2 devices, loop placement, 2 stages, 2 micro-batches, costs=ir
// COSTIR-NEXT: makespan: 219
// COSTIR-NEXT: bubble ratio: 0.4932
// COSTIR-NEXT: rank
// COSTIR-NEXT:   P0        6   0.9726          2           64          512
// COSTIR-NEXT:   P1      216   0.0137          1          864          512

// SVG: <svg
// SVG: <title>bitpipe  D=4  N=4  makespan 28 units
// SVG: class="tick"{{.*}}>0 units</text>
// SVG: </svg>

// With tflops=6.4e-5 a millisecond is 64,000 FLOPs: the times above over
// 1000.
// MS: makespan: 0.219 ms
// MS: all-reduce: time 0 ms
// MS: time unit: milliseconds, the stages' nn.cost FLOPs at 6.4e-05 TFLOP/s
// The shortest box would be 24 px wide, but the plot stops at 4000 px:
// the first forward, 0.001 of 0.219 ms, is 4000 / 219 = 18.265 px wide.
// SVG-MS: <title>1f1b  D=2  N=2  makespan 0.219 ms
// SVG-MS: class="tick"{{.*}}>0 ms</text>
// SVG-MS: <rect class="action" x="56" y="52" width="18.265" height="26"

// TRACE: "traceEvents"
// TRACE: "name":"AR(4,7)"

// One row per rank, torch's {stage}{F|B}{microbatch}.
// CSV:      0F0,0F1,3F2,4F2,3F3,4F3,7F0,7B0,7F1,7B1,4B2,3B2,4B3,3B3,0B0,0B1
// CSV-NEXT: 1F0,2F2,1F1,2F3,5F2,6F0,5F3,6F1,6B0,5B2,6B1,5B3,2B2,1B0,2B3,1B1

// costs=ir with a split backward: W is what only makes weight gradients
// (sched::ComputeWork), B the rest. Stage 0's embedding backward (128
// FLOPs) is all W: B0 = 0, W0 = 2 units of 64 FLOPs. Stage 1's linear
// (8 tokens, 8 -> 16: 2048 FLOPs a product) has its weight product in W
// (32 units) and its input product with the cross-entropy's backward (256)
// in B (36 units). The trace counts a unit as 1000 of its microseconds.
// ZB-DAG: "name":"B0.s0"{{.*}}"dur":0,
// ZB-DAG: "name":"W0.s0"{{.*}}"dur":2000,
// ZB-DAG: "name":"B0.s1"{{.*}}"dur":36000,
// ZB-DAG: "name":"W0.s1"{{.*}}"dur":32000,

// cluster=: seconds on a cluster file, each stage's work at its rates (here
// cpu-dev.json's by kernel shape) and the hand-offs on its link (0.1 ms
// each: they are most of this tiny model's step).
// CLUSTER:      makespan: {{[0-9.e-]+}} s
// CLUSTER:      time unit: seconds on cluster cpu-dev (its rates by kernel shape, its links)
// CLUSTER-UNIT: error: bitpipe-simulate: cluster= times the stages' work: it needs costs=ir, got costs=unit
// CLUSTER-TFLOPS: error: bitpipe-simulate: cluster= and tflops= both set the compute rate; give one
// CLUSTER-MISSING: error: bitpipe-simulate: {{.*}}missing.json: cannot be read: expected a cluster description (JSON, docs/clusters.md)
// CLUSTER-SIZE: error: bitpipe-simulate: the world has 4 ranks, but cluster cpu-dev has 2 GPUs (1 node x 2)

// The module's gradient sync, charged: BitPipe's mirror pairs on one node
// (D = 4), 8 copies over a100-4x8's 4 nodes. Flat, each rank sends its
// ring share of both stages' gradients over all 16 holders across nodes;
// in two levels only its half's share over its 8 copies (the pair's
// reduce-scatter and all-gather stay on the node): half the bytes, and
// less time.
// TWO-LEVEL:  all-reduce: time 0.0001442 s
// TWO-LEVEL:  gradient sync: hierarchical, at most 1664 all-reduce bytes a rank sends across nodes
// FLAT:       all-reduce: time 0.0001684 s
// FLAT:       gradient sync: flat, at most 3328 all-reduce bytes a rank sends across nodes
