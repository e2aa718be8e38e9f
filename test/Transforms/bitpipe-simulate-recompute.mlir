// costs=ir after bitpipe-generate-backward: the simulator counts what the
// stages keep and what their backwards compute again as the module records
// it (bitpipe.recompute), by the planner's rule (docs/recompute.md).
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages-ln.mlir --bitpipe-annotate-cost --bitpipe-generate-backward --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir" -o /dev/null | FileCheck %s --check-prefix=NONE
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages-ln.mlir --bitpipe-annotate-cost --bitpipe-generate-backward=recompute=selective --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir" -o /dev/null | FileCheck %s --check-prefix=SELECTIVE
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages-ln.mlir --bitpipe-annotate-cost --bitpipe-generate-backward=recompute=full --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir" -o /dev/null | FileCheck %s --check-prefix=FULL

// nn.cost (FLOPs, saved bytes per micro-batch): embedding F 64 B 128, 32
// (its token ids); layer norm F 320 B 640, 320 (its 2x4x8 f32 input, 256,
// and its mean and rstd, 2x4 f32 each, 64); linear F 2048 B 4096, 256;
// cross-entropy F 512 B 256, 608 (its logits, 512, labels, 32, and its
// rows' max and log-sum, 64). Stage 0: F 384 B 768, keeps 352; stage 1:
// F 2560 B 4352, keeps 864. Units of the cheapest forward (384): F0 = 1,
// B0 = 2, F1 = 6.667, B1 = 11.33. Each stage hands on 256 bytes a
// micro-batch (the forward's saved results are not sent: 2 x 256 each way).
//
// none: P1 runs F1 [1, 7.667], B1 [7.667, 19], F1 [19, 25.67], B1
// [25.67, 37]; P0's last B0 ends at 39. P0 keeps 2 x 352 bytes in flight.
// NONE:      makespan: 39 units
// NONE:        P0        6   0.8462          2          704          512
// NONE-NEXT:   P1       36   0.0769          1          864          512

// selective: the statistics are not kept (352 - 64 = 288 and 864 - 64 = 800
// a micro-batch) and the backwards compute them again at their ops' forward
// FLOPs: B0 = (768 + 320) / 384 = 2.833, B1 = (4352 + 512) / 384 = 12.67.
// P1: F1 [1, 7.667], B1 [7.667, 20.33], F1 [20.33, 27], B1 [27, 39.67]; the
// last B0 ends at 39.67 + 2.833 = 42.5.
// SELECTIVE:      makespan: 42.5 units
// SELECTIVE:        P0    7.667   0.8196          2          576          512
// SELECTIVE-NEXT:   P1    38.67   0.0902          1          800          512

// full: each stage keeps its inputs (stage 0: 2x4 i32 token ids, 32 bytes;
// stage 1: its 2x4x8 f32 input and 2x4 i32 labels, 288) and each backward
// runs its forward again: B0 = (768 + 384) / 384 = 3, B1 = (4352 + 2560)
// / 384 = 18. P1: F1 [1, 7.667], B1 [7.667, 25.67], F1 [25.67, 32.33], B1
// [32.33, 50.33]; P0's last B0 ends at 53.33.
// FULL:      makespan: 53.33 units
// FULL:        P0        8   0.8500          2           64          512
// FULL-NEXT:   P1    49.33   0.0750          1          288          512
