// RUN: bitpipe-opt %s --bitpipe-place="placement=bidirectional-v devices=2" --bitpipe-schedule="schedule=bitpipe microbatches=2" | FileCheck %s
// Round trip of what the pass writes, in custom and generic form.
// RUN: bitpipe-opt %s --bitpipe-place="placement=bidirectional-v devices=2" --bitpipe-schedule="schedule=bitpipe microbatches=2" | bitpipe-opt | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-place="placement=bidirectional-v devices=2" --bitpipe-schedule="schedule=bitpipe microbatches=2" --mlir-print-op-generic | bitpipe-opt | FileCheck %s
// Split backward: weight_grad after its backward, on the same handle.
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=zb-h1 microbatches=2" | FileCheck %s --check-prefix=ZB

// The grid of every schedule for small D and N, read back from the programs
// by bitpipe-simulate. BitPipe's is the reference order of docs/bitpipe-order.md.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=gpipe microbatches=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=1F1B
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=2 chunks-per-device=2" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=INTERLEAVED
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=bidirectional devices=4" --bitpipe-schedule="schedule=chimera microbatches=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=CHIMERA
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=BITPIPE
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=8" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=BITPIPE8
// Without microbatches the schedule registry's default, N = 2 D: the same.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=BITPIPE8
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe-periodic microbatches=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=PERIODIC
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=zb-h1 microbatches=4" --bitpipe-simulate="grid b-cost=1" -o /dev/null | FileCheck %s --check-prefix=ZBH1

// BitPipe on 2 devices, 2 micro-batches (one down, one up). Grid:
//   P0: F0.s0 F1.s1 F1.s2 F0.s3 B0.s3 B1.s2 B1.s1 B0.s0 AR(2,3) AR(0,1)
//   P1: F1.s0 F0.s1 F0.s2 F1.s3 B1.s3 B0.s2 B0.s1 B1.s0 AR(2,3) AR(0,1)
// Stage 0 reads the tokens, stage 3 the labels; every stage has replicas on
// both devices, so every all-reduce spans [0, 1].

// CHECK: module attributes {
// CHECK-SAME: bitpipe.schedule = #bitpipe.schedule<name = "bitpipe", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>

// CHECK-LABEL: bitpipe.program @rank0 rank 0 {
// CHECK-NEXT:    %[[T0:.+]] = load_input tokens microbatch 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[S00:.+]] = forward(%[[T0]]) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
// CHECK-NEXT:    %[[S11:.+]] = forward stage 1 microbatch 1 : () -> !bitpipe.saved
// CHECK-NEXT:    %[[S21:.+]] = forward stage 2 microbatch 1 : () -> !bitpipe.saved
// CHECK-NEXT:    %[[L0:.+]] = load_input targets microbatch 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[S30:.+]] = forward(%[[L0]]) stage 3 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
// CHECK-NEXT:    backward(%[[S30]]) stage 3 microbatch 0 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    backward(%[[S21]]) stage 2 microbatch 1 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    backward(%[[S11]]) stage 1 microbatch 1 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    backward(%[[S00]]) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    %[[AR0:.+]] = allreduce_start stages [2, 3] group [0, 1] bucket 0 : !bitpipe.token
// CHECK-NEXT:    %[[AR1:.+]] = allreduce_start stages [0, 1] group [0, 1] bucket 1 : !bitpipe.token
// CHECK-NEXT:    allreduce_wait %[[AR0]]
// CHECK-NEXT:    allreduce_wait %[[AR1]]
// CHECK-NEXT:    optimizer_step
// CHECK-NEXT:  }

// CHECK-LABEL: bitpipe.program @rank1 rank 1 {
// CHECK-NEXT:    %[[T1:.+]] = load_input tokens microbatch 1 : tensor<2x4xi32>
// CHECK-NEXT:    %[[S01:.+]] = forward(%[[T1]]) stage 0 microbatch 1 : (tensor<2x4xi32>) -> !bitpipe.saved
// CHECK-NEXT:    %[[S10:.+]] = forward stage 1 microbatch 0 : () -> !bitpipe.saved
// CHECK-NEXT:    %[[S20:.+]] = forward stage 2 microbatch 0 : () -> !bitpipe.saved
// CHECK-NEXT:    %[[L1:.+]] = load_input targets microbatch 1 : tensor<2x4xi32>
// CHECK-NEXT:    %[[S31:.+]] = forward(%[[L1]]) stage 3 microbatch 1 : (tensor<2x4xi32>) -> !bitpipe.saved
// CHECK-NEXT:    backward(%[[S31]]) stage 3 microbatch 1 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    backward(%[[S20]]) stage 2 microbatch 0 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    backward(%[[S10]]) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    backward(%[[S01]]) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
// CHECK-NEXT:    %[[AR0:.+]] = allreduce_start stages [2, 3] group [0, 1] bucket 0 : !bitpipe.token
// CHECK-NEXT:    %[[AR1:.+]] = allreduce_start stages [0, 1] group [0, 1] bucket 1 : !bitpipe.token
// CHECK-NEXT:    allreduce_wait %[[AR0]]
// CHECK-NEXT:    allreduce_wait %[[AR1]]
// CHECK-NEXT:    optimizer_step
// CHECK-NEXT:  }
// CHECK-NOT: bitpipe.program

module {
  func.func private @gpt_stage0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @gpt_stage1(tensor<2x4x8xf32>, tensor<8x8xf32> {nn.param = "h1.w"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 1 : i64}
  func.func private @gpt_stage2(tensor<2x4x8xf32>, tensor<8x8xf32> {nn.param = "h2.w"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 2 : i64}
  func.func private @gpt_stage3(tensor<2x4x8xf32>, tensor<16x8xf32> {nn.param = "wte"}, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 3 : i64}
}

// ZB: bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = true>
// ZB-LABEL: bitpipe.program @rank0 rank 0 {
// ZB-NEXT:    %[[T0:.+]] = load_input tokens microbatch 0 : tensor<2x4xi32>
// ZB-NEXT:    %[[S0:.+]] = forward(%[[T0]]) stage 0 microbatch 0
// ZB-NEXT:    %[[T1:.+]] = load_input tokens microbatch 1 : tensor<2x4xi32>
// ZB-NEXT:    %[[S1:.+]] = forward(%[[T1]]) stage 0 microbatch 1
// ZB-NEXT:    backward(%[[S0]]) stage 0 microbatch 0
// ZB-NEXT:    weight_grad(%[[S0]]) stage 0 microbatch 0
// ZB-NEXT:    backward(%[[S1]]) stage 0 microbatch 1
// ZB-NEXT:    weight_grad(%[[S1]]) stage 0 microbatch 1
// Stages without replicas: no all-reduce.
// ZB-NEXT:    optimizer_step
// ZB-LABEL: bitpipe.program @rank1 rank 1 {
// ZB-NEXT:    %[[L0:.+]] = load_input targets microbatch 0 : tensor<2x4xi32>
// ZB-NEXT:    %[[S0:.+]] = forward(%[[L0]]) stage 1 microbatch 0
// ZB-NEXT:    backward(%[[S0]]) stage 1 microbatch 0
// ZB-NEXT:    %[[L1:.+]] = load_input targets microbatch 1 : tensor<2x4xi32>
// ZB-NEXT:    %[[S1:.+]] = forward(%[[L1]]) stage 1 microbatch 1
// ZB-NEXT:    backward(%[[S1]]) stage 1 microbatch 1
// ZB-NEXT:    weight_grad(%[[S0]]) stage 1 microbatch 0
// ZB-NEXT:    weight_grad(%[[S1]]) stage 1 microbatch 1
// ZB-NEXT:    optimizer_step

// GPIPE:      P0: F0.s0 F1.s0 F2.s0 F3.s0 B0.s0 B1.s0 B2.s0 B3.s0{{$}}
// GPIPE-NEXT: P1: F0.s1 F1.s1 F2.s1 F3.s1 B0.s1 B1.s1 B2.s1 B3.s1{{$}}
// GPIPE-NEXT: P2: F0.s2 F1.s2 F2.s2 F3.s2 B0.s2 B1.s2 B2.s2 B3.s2{{$}}
// GPIPE-NEXT: P3: F0.s3 F1.s3 F2.s3 F3.s3 B0.s3 B1.s3 B2.s3 B3.s3{{$}}
// GPIPE-NEXT: schedule gpipe: 4 devices, loop placement, 4 stages, 4 micro-batches

// 1F1B:      P0: F0.s0 F1.s0 F2.s0 F3.s0 B0.s0 B1.s0 B2.s0 B3.s0{{$}}
// 1F1B-NEXT: P1: F0.s1 F1.s1 F2.s1 B0.s1 F3.s1 B1.s1 B2.s1 B3.s1{{$}}
// 1F1B-NEXT: P2: F0.s2 F1.s2 B0.s2 F2.s2 B1.s2 F3.s2 B2.s2 B3.s2{{$}}
// 1F1B-NEXT: P3: F0.s3 B0.s3 F1.s3 B1.s3 F2.s3 B2.s3 F3.s3 B3.s3{{$}}
// 1F1B-NEXT: schedule 1f1b: 4 devices, loop placement, 4 stages, 4 micro-batches

// Two chunks per device: stages 0, 2 on P0 and 1, 3 on P1.
// INTERLEAVED:      P0: F0.s0 F1.s0 F0.s2 F1.s2 F2.s0 B0.s2 F3.s0 B1.s2 F2.s2 B0.s0 F3.s2 B1.s0 B2.s2 B3.s2 B2.s0 B3.s0{{$}}
// INTERLEAVED-NEXT: P1: F0.s1 F1.s1 F0.s3 B0.s3 F1.s3 B1.s3 F2.s1 B0.s1 F3.s1 B1.s1 F2.s3 B2.s3 F3.s3 B3.s3 B2.s1 B3.s1{{$}}
// INTERLEAVED-NEXT: schedule interleaved-1f1b: 2 devices, loop placement, 4 stages, 4 micro-batches

// CHIMERA:      P0: F0.s0 F1.s0 F2.s3 B2.s3 F3.s3 B3.s3 AR(3) B0.s0 B1.s0 AR(0){{$}}
// CHIMERA-NEXT: P1: F0.s1 F2.s2 F1.s1 F3.s2 B2.s2 B0.s1 B3.s2 AR(2) B1.s1 AR(1){{$}}
// CHIMERA-NEXT: P2: F2.s1 F0.s2 F3.s1 F1.s2 B0.s2 B2.s1 B1.s2 AR(2) B3.s1 AR(1){{$}}
// CHIMERA-NEXT: P3: F2.s0 F3.s0 F0.s3 B0.s3 F1.s3 B1.s3 AR(3) B2.s0 B3.s0 AR(0){{$}}
// CHIMERA-NEXT: schedule chimera: 4 devices, bidirectional placement, 4 stages, 4 micro-batches

// docs/bitpipe-order.md's D=4, N=4 example, verbatim.
// BITPIPE:      P0: F0.s0 F1.s0 F2.s3 F2.s4 F3.s3 F3.s4 F0.s7 B0.s7 F1.s7 B1.s7 B2.s4 B2.s3 B3.s4 B3.s3 B0.s0 AR(4,7) B1.s0 AR(0,3){{$}}
// BITPIPE-NEXT: P1: F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 F3.s5 F1.s6 B0.s6 B2.s5 B1.s6 B3.s5 B2.s2 B0.s1 B3.s2 B1.s1 AR(5,6) AR(1,2){{$}}
// BITPIPE-NEXT: P2: F2.s1 F0.s2 F3.s1 F1.s2 F0.s5 F2.s6 F1.s5 F3.s6 B2.s6 B0.s5 B3.s6 B1.s5 B0.s2 B2.s1 B1.s2 B3.s1 AR(5,6) AR(1,2){{$}}
// BITPIPE-NEXT: P3: F2.s0 F3.s0 F0.s3 F0.s4 F1.s3 F1.s4 F2.s7 B2.s7 F3.s7 B3.s7 B0.s4 B0.s3 B1.s4 B1.s3 B2.s0 AR(4,7) B3.s0 AR(0,3){{$}}
// BITPIPE-NEXT: schedule bitpipe: 4 devices, bidirectional-v placement, 8 stages, 4 micro-batches

// docs/bitpipe-order.md's periodic order at D=4, N=4: pair 0 is micro-batches
// 0 (down) and 2 (up), pair 1 is 1 and 3; ranks 0 and 3 run the same steps
// at the same times, mirrored.
// PERIODIC:      P0: F0.s0 F2.s3 F1.s0 F2.s4 F3.s3 F0.s7 B0.s7 F3.s4 B2.s4 B2.s3 F1.s7 B1.s7 B0.s0 B3.s4 AR(4,7) B3.s3 B1.s0 AR(0,3){{$}}
// PERIODIC-NEXT: P1: F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 B0.s6 B2.s5 F3.s5 F1.s6 B2.s2 B0.s1 B1.s6 B3.s5 AR(5,6) B3.s2 B1.s1 AR(1,2){{$}}
// PERIODIC-NEXT: P2: F2.s1 F0.s2 F3.s1 F1.s2 F0.s5 F2.s6 B2.s6 B0.s5 F1.s5 F3.s6 B0.s2 B2.s1 B3.s6 B1.s5 AR(5,6) B1.s2 B3.s1 AR(1,2){{$}}
// PERIODIC-NEXT: P3: F2.s0 F0.s3 F3.s0 F0.s4 F1.s3 F2.s7 B2.s7 F1.s4 B0.s4 B0.s3 F3.s7 B3.s7 B2.s0 B1.s4 AR(4,7) B1.s3 B3.s0 AR(0,3){{$}}
// PERIODIC-NEXT: schedule bitpipe-periodic: 4 devices, bidirectional-v placement, 8 stages, 4 micro-batches

// docs/bitpipe-order.md, N=8: rank 0 from the reference implementation; ranks 1-3 worked by hand from its
// rules (D=4, h=2, N/D=2 units, loops=1, mid=8):
//   P1: r=1, o=0, a=1, W=4+2+1=7, U=1. f per unit: L0; L1 L0; L1 L3; L2 L3;
//       L2, i.e. F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 F3.s5 F1.s6 (chunk c of
//       P1 is stage [1, 2, 6, 5][c]; L0/L2 carry down micro-batches 0,1 then
//       4,5, L1/L3 up 2,3 then 6,7). b per unit: L2; L3 L2; L3 L1; L0 L1;
//       L0, i.e. B0.s6 B2.s5 B1.s6 B3.s5 B2.s2 B0.s1 B3.s2 B1.s1; P1 is rank
//       h-1, so both AR markers go to the end: AR(5,6) then AR(1,2).
//       Phases: F f[0..6]; F f[7] B b[0]; B b[1..7]; (U-2 < 0: none);
//       F f[8..14]; F f[15] B b[8]; B b[9..15] AR AR: unit 0's line, then
//       the same with micro-batches + 4.
//   P2: r=2, o=1, a=1, W=7: the mirror of P1 (L1 <-> L0, L3 <-> L2; chunk c
//       is stage [2, 1, 5, 6][c]): down micro-batches swap with up ones.
//   P3: r=3, o=1, a=2, W=4+2+0=6, U=2: the mirror of P0 (chunk c is stage
//       [3, 0, 4, 7][c], up micro-batches 2,3 / 6,7 where P0 has down 0,1 /
//       4,5); one marker before the last backward, one at the end.
// Unit costs F=1, B=2: makespan 54 (docs/bitpipe-order.md, D=4 N=8); every rank runs 4
// chunks x N/2 = 4 micro-batches x (1 + 2) = 48 busy slots, so the bubble
// is 1 - 48/54 = 0.1111 on each rank.
// BITPIPE8:      P0: F0.s0 F1.s0 F2.s3 F2.s4 F3.s3 F3.s4 F0.s7 B0.s7 F1.s7 B1.s7 B2.s4 B2.s3 B3.s4 B3.s3 B0.s0 F4.s0 B1.s0 F5.s0 F6.s3 F6.s4 F7.s3 F7.s4 F4.s7 B4.s7 F5.s7 B5.s7 B6.s4 B6.s3 B7.s4 B7.s3 B4.s0 AR(4,7) B5.s0 AR(0,3){{$}}
// BITPIPE8-NEXT: P1: F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 F3.s5 F1.s6 B0.s6 B2.s5 B1.s6 B3.s5 B2.s2 B0.s1 B3.s2 B1.s1 F4.s1 F6.s2 F5.s1 F7.s2 F6.s5 F4.s6 F7.s5 F5.s6 B4.s6 B6.s5 B5.s6 B7.s5 B6.s2 B4.s1 B7.s2 B5.s1 AR(5,6) AR(1,2){{$}}
// BITPIPE8-NEXT: P2: F2.s1 F0.s2 F3.s1 F1.s2 F0.s5 F2.s6 F1.s5 F3.s6 B2.s6 B0.s5 B3.s6 B1.s5 B0.s2 B2.s1 B1.s2 B3.s1 F6.s1 F4.s2 F7.s1 F5.s2 F4.s5 F6.s6 F5.s5 F7.s6 B6.s6 B4.s5 B7.s6 B5.s5 B4.s2 B6.s1 B5.s2 B7.s1 AR(5,6) AR(1,2){{$}}
// BITPIPE8-NEXT: P3: F2.s0 F3.s0 F0.s3 F0.s4 F1.s3 F1.s4 F2.s7 B2.s7 F3.s7 B3.s7 B0.s4 B0.s3 B1.s4 B1.s3 B2.s0 F6.s0 B3.s0 F7.s0 F4.s3 F4.s4 F5.s3 F5.s4 F6.s7 B6.s7 F7.s7 B7.s7 B4.s4 B4.s3 B5.s4 B5.s3 B6.s0 AR(4,7) B7.s0 AR(0,3){{$}}
// BITPIPE8-NEXT: schedule bitpipe: 4 devices, bidirectional-v placement, 8 stages, 8 micro-batches
// BITPIPE8-NEXT: makespan: 54 units{{$}}
// BITPIPE8-NEXT: bubble ratio: 0.1111{{$}}

// ZBH1:      P0: F0.s0 F1.s0 F2.s0 F3.s0 B0.s0 W0.s0 B1.s0 W1.s0 B2.s0 W2.s0 B3.s0 W3.s0{{$}}
// ZBH1-NEXT: P1: F0.s1 F1.s1 F2.s1 B0.s1 F3.s1 B1.s1 W0.s1 B2.s1 W1.s1 B3.s1 W2.s1 W3.s1{{$}}
// ZBH1-NEXT: P2: F0.s2 F1.s2 B0.s2 F2.s2 B1.s2 F3.s2 B2.s2 W0.s2 B3.s2 W1.s2 W2.s2 W3.s2{{$}}
// ZBH1-NEXT: P3: F0.s3 B0.s3 F1.s3 B1.s3 F2.s3 B2.s3 F3.s3 B3.s3 W0.s3 W1.s3 W2.s3 W3.s3{{$}}
// ZBH1-NEXT: schedule zb-h1: 4 devices, loop placement, 4 stages, 4 micro-batches
