// bitpipe-insert-transfers on every schedule. The `comms` lines are the
// programs read back from the IR, transfers included (one line per rank:
// compute steps, SEND/RECV with the peer, COPY for a local hand-off), so
// they show the count and order of sends, receives and local copies of
// every rank; `{{$}}` pins whole lines.
//
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-transfers | FileCheck %s --check-prefix=IR
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=BITPIPE
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=gpipe microbatches=2" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=ONEF
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=2 chunks-per-device=2" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=2" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=INTERLEAVED
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=4" --bitpipe-schedule="schedule=chimera microbatches=4" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=CHIMERA
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward=split --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=zb-h1 microbatches=2" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=ZB
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward=split --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=zb-h1 microbatches=2" --bitpipe-insert-transfers | FileCheck %s --check-prefix=ZB-IR
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=1 chunks-per-device=4" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=1" --bitpipe-insert-transfers --bitpipe-simulate=comms -o /dev/null | FileCheck %s --check-prefix=ONE
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-transfers=streams=shared | FileCheck %s --check-prefix=SHARED

// BitPipe, D=4, N=4: micro-batches 0 and 1 travel down (s0..s3 on ranks
// 0..3, s4..s7 on ranks 3..0), 2 and 3 up (the mirror). The only local
// hand-offs are the bottoms of the two Vs: s3 -> s4 (and the gradient
// s4 -> s3) on rank 3 for the down micro-batches, on rank 0 for the up ones.
// No rank sends to itself: every SEND names another rank.
// BITPIPE: P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 RECV_F2.s2<-P1 F2.s3 COPY_F2.s3 F2.s4 SEND_F2.s4->P1 RECV_F3.s2<-P1 F3.s3 COPY_F3.s3 F3.s4 SEND_F3.s4->P1 RECV_F0.s6<-P1 F0.s7 B0.s7 SEND_B0.s7->P1 RECV_F1.s6<-P1 F1.s7 B1.s7 SEND_B1.s7->P1 RECV_B2.s5<-P1 B2.s4 COPY_B2.s4 B2.s3 SEND_B2.s3->P1 RECV_B3.s5<-P1 B3.s4 COPY_B3.s4 B3.s3 SEND_B3.s3->P1 RECV_B0.s1<-P1 B0.s0 AR(4,7) RECV_B1.s1<-P1 B1.s0 AR(0,3){{$}}
// BITPIPE: P1: RECV_F0.s0<-P0 F0.s1 SEND_F0.s1->P2 RECV_F2.s1<-P2 F2.s2 SEND_F2.s2->P0 RECV_F1.s0<-P0 F1.s1 SEND_F1.s1->P2 RECV_F3.s1<-P2 F3.s2 SEND_F3.s2->P0 RECV_F2.s4<-P0 F2.s5 SEND_F2.s5->P2 RECV_F0.s5<-P2 F0.s6 SEND_F0.s6->P0 RECV_F3.s4<-P0 F3.s5 SEND_F3.s5->P2 RECV_F1.s5<-P2 F1.s6 SEND_F1.s6->P0 RECV_B0.s7<-P0 B0.s6 SEND_B0.s6->P2 RECV_B2.s6<-P2 B2.s5 SEND_B2.s5->P0 RECV_B1.s7<-P0 B1.s6 SEND_B1.s6->P2 RECV_B3.s6<-P2 B3.s5 SEND_B3.s5->P0 RECV_B2.s3<-P0 B2.s2 SEND_B2.s2->P2 RECV_B0.s2<-P2 B0.s1 SEND_B0.s1->P0 RECV_B3.s3<-P0 B3.s2 SEND_B3.s2->P2 RECV_B1.s2<-P2 B1.s1 SEND_B1.s1->P0 AR(5,6) AR(1,2){{$}}
// BITPIPE: P2: RECV_F2.s0<-P3 F2.s1 SEND_F2.s1->P1 RECV_F0.s1<-P1 F0.s2 SEND_F0.s2->P3 RECV_F3.s0<-P3 F3.s1 SEND_F3.s1->P1 RECV_F1.s1<-P1 F1.s2 SEND_F1.s2->P3 RECV_F0.s4<-P3 F0.s5 SEND_F0.s5->P1 RECV_F2.s5<-P1 F2.s6 SEND_F2.s6->P3 RECV_F1.s4<-P3 F1.s5 SEND_F1.s5->P1 RECV_F3.s5<-P1 F3.s6 SEND_F3.s6->P3 RECV_B2.s7<-P3 B2.s6 SEND_B2.s6->P1 RECV_B0.s6<-P1 B0.s5 SEND_B0.s5->P3 RECV_B3.s7<-P3 B3.s6 SEND_B3.s6->P1 RECV_B1.s6<-P1 B1.s5 SEND_B1.s5->P3 RECV_B0.s3<-P3 B0.s2 SEND_B0.s2->P1 RECV_B2.s2<-P1 B2.s1 SEND_B2.s1->P3 RECV_B1.s3<-P3 B1.s2 SEND_B1.s2->P1 RECV_B3.s2<-P1 B3.s1 SEND_B3.s1->P3 AR(5,6) AR(1,2){{$}}
// BITPIPE: P3: F2.s0 SEND_F2.s0->P2 F3.s0 SEND_F3.s0->P2 RECV_F0.s2<-P2 F0.s3 COPY_F0.s3 F0.s4 SEND_F0.s4->P2 RECV_F1.s2<-P2 F1.s3 COPY_F1.s3 F1.s4 SEND_F1.s4->P2 RECV_F2.s6<-P2 F2.s7 B2.s7 SEND_B2.s7->P2 RECV_F3.s6<-P2 F3.s7 B3.s7 SEND_B3.s7->P2 RECV_B0.s5<-P2 B0.s4 COPY_B0.s4 B0.s3 SEND_B0.s3->P2 RECV_B1.s5<-P2 B1.s4 COPY_B1.s4 B1.s3 SEND_B1.s3->P2 RECV_B2.s1<-P2 B2.s0 AR(4,7) RECV_B3.s1<-P2 B3.s0 AR(0,3){{$}}

// The module records how the runtime lays the transfers on streams.
// IR:      module attributes {
// IR-SAME: bitpipe.transfer_streams = #bitpipe.transfer_streams<channel>
// On rank 0 the up micro-batches meet at the bottom of their V.
// IR-LABEL: bitpipe.program @rank0 rank 0 {
// IR:      %[[Y:.+]], %{{.+}} = forward @gpt_stage3(%{{.+}}) stage 3 microbatch 2
// IR-NEXT: %[[C:.+]] = local_copy activation %[[Y]] stage 3 microbatch 2
// IR-NEXT: forward @gpt_stage4(%[[C]]) stage 4 microbatch 2
// IR:      %[[G:.+]] = backward @gpt_stage4_bwd({{.+}}) stage 4 microbatch 2
// IR-NEXT: %[[GC:.+]] = local_copy gradient %[[G]] stage 4 microbatch 2
// IR-NEXT: backward @gpt_stage3_bwd(%{{.+}}, %[[GC]]) stage 3 microbatch 2
// IR-LABEL: bitpipe.program @rank1 rank 1 {

// On rank 3 the forward of s3 for micro-batch 0 hands its
// output to s4 by a local copy, and the gradient of s4 comes back the same
// way. Every send and receive is a batch of its own (one NCCL group on its
// channel's stream: streams=channel, the default), numbered in program
// order.
// IR-LABEL: bitpipe.program @rank3 rank 3 {
// IR:      %[[X3:.+]] = recv activation from 2 stage 2 microbatch 0 batch 2 : tensor<2x4x8xf32>
// IR-NEXT: %[[Y3:.+]], %[[S3:.+]] = forward @gpt_stage3(%[[X3]]) stage 3 microbatch 0 : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
// IR-NEXT: %[[C3:.+]] = local_copy activation %[[Y3]] stage 3 microbatch 0 : tensor<2x4x8xf32>
// IR-NEXT: %[[Y4:.+]], %[[S4:.+]] = forward @gpt_stage4(%[[C3]]) stage 4 microbatch 0
// IR-NEXT: send activation %[[Y4]] to 2 stage 4 microbatch 0 batch 3 : tensor<2x4x8xf32>
// IR-NEXT: recv activation from 2 stage 2 microbatch 1 batch 4
// The loss stage: no output gradient, its input gradient goes back to rank 2.
// IR:      %[[L:.+]], %[[S7:.+]] = forward @gpt_stage7(%{{.+}}, %{{.+}}) stage 7 microbatch 2 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
// IR-NEXT: %[[G7:.+]] = backward @gpt_stage7_bwd(%[[S7]]) stage 7 microbatch 2 : (!bitpipe.saved) -> tensor<2x4x8xf32>
// IR-NEXT: send gradient %[[G7]] to 2 stage 7 microbatch 2 batch 7
// IR:      %[[G5:.+]] = recv gradient from 2 stage 5 microbatch 0 batch 10
// IR-NEXT: %[[G4:.+]] = backward @gpt_stage4_bwd(%[[S4]], %[[G5]]) stage 4 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// IR-NEXT: %[[GC:.+]] = local_copy gradient %[[G4]] stage 4 microbatch 0
// IR-NEXT: %[[G3:.+]] = backward @gpt_stage3_bwd(%[[S3]], %[[GC]]) stage 3 microbatch 0
// IR-NEXT: send gradient %[[G3]] to 2 stage 3 microbatch 0 batch 11
// The first stage (tokens only) returns no gradient.
// IR:      backward @gpt_stage0_bwd(%{{.+}}, %{{.+}}) stage 0 microbatch 2 : (!bitpipe.saved, tensor<2x4x8xf32>) -> (){{$}}
// IR-NEXT: allreduce_start stages [4, 7] group [0, 3]


// GPipe and one-forward-one-backward: every hand-off crosses to the next rank; nothing is local.
// GPIPE: P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 RECV_B0.s1<-P1 B0.s0 RECV_B1.s1<-P1 B1.s0{{$}}
// GPIPE: P1: RECV_F0.s0<-P0 F0.s1 SEND_F0.s1->P2 RECV_F1.s0<-P0 F1.s1 SEND_F1.s1->P2 RECV_B0.s2<-P2 B0.s1 SEND_B0.s1->P0 RECV_B1.s2<-P2 B1.s1 SEND_B1.s1->P0{{$}}
// GPIPE: P2: RECV_F0.s1<-P1 F0.s2 SEND_F0.s2->P3 RECV_F1.s1<-P1 F1.s2 SEND_F1.s2->P3 RECV_B0.s3<-P3 B0.s2 SEND_B0.s2->P1 RECV_B1.s3<-P3 B1.s2 SEND_B1.s2->P1{{$}}
// GPIPE: P3: RECV_F0.s2<-P2 F0.s3 RECV_F1.s2<-P2 F1.s3 B0.s3 SEND_B0.s3->P2 B1.s3 SEND_B1.s3->P2{{$}}

// ONEF: P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 F2.s0 SEND_F2.s0->P1 F3.s0 SEND_F3.s0->P1 RECV_B0.s1<-P1 B0.s0 RECV_B1.s1<-P1 B1.s0 RECV_B2.s1<-P1 B2.s0 RECV_B3.s1<-P1 B3.s0{{$}}
// ONEF: P1: RECV_F0.s0<-P0 F0.s1 SEND_F0.s1->P2 RECV_F1.s0<-P0 F1.s1 SEND_F1.s1->P2 RECV_F2.s0<-P0 F2.s1 SEND_F2.s1->P2 RECV_B0.s2<-P2 B0.s1 SEND_B0.s1->P0 RECV_F3.s0<-P0 F3.s1 SEND_F3.s1->P2 RECV_B1.s2<-P2 B1.s1 SEND_B1.s1->P0 RECV_B2.s2<-P2 B2.s1 SEND_B2.s1->P0 RECV_B3.s2<-P2 B3.s1 SEND_B3.s1->P0{{$}}
// ONEF: P2: RECV_F0.s1<-P1 F0.s2 SEND_F0.s2->P3 RECV_F1.s1<-P1 F1.s2 SEND_F1.s2->P3 RECV_B0.s3<-P3 B0.s2 SEND_B0.s2->P1 RECV_F2.s1<-P1 F2.s2 SEND_F2.s2->P3 RECV_B1.s3<-P3 B1.s2 SEND_B1.s2->P1 RECV_F3.s1<-P1 F3.s2 SEND_F3.s2->P3 RECV_B2.s3<-P3 B2.s2 SEND_B2.s2->P1 RECV_B3.s3<-P3 B3.s2 SEND_B3.s2->P1{{$}}
// ONEF: P3: RECV_F0.s2<-P2 F0.s3 B0.s3 SEND_B0.s3->P2 RECV_F1.s2<-P2 F1.s3 B1.s3 SEND_B1.s3->P2 RECV_F2.s2<-P2 F2.s3 B2.s3 SEND_B2.s3->P2 RECV_F3.s2<-P2 F3.s3 B3.s3 SEND_B3.s3->P2{{$}}

// Interleaved 1F1B on two ranks: the loop wraps around from rank 1 to rank 0.
// INTERLEAVED: P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 RECV_F0.s1<-P1 F0.s2 SEND_F0.s2->P1 RECV_F1.s1<-P1 F1.s2 SEND_F1.s2->P1 RECV_B0.s3<-P1 B0.s2 SEND_B0.s2->P1 RECV_B1.s3<-P1 B1.s2 SEND_B1.s2->P1 RECV_B0.s1<-P1 B0.s0 RECV_B1.s1<-P1 B1.s0{{$}}
// INTERLEAVED: P1: RECV_F0.s0<-P0 F0.s1 SEND_F0.s1->P0 RECV_F1.s0<-P0 F1.s1 SEND_F1.s1->P0 RECV_F0.s2<-P0 F0.s3 B0.s3 SEND_B0.s3->P0 RECV_F1.s2<-P0 F1.s3 B1.s3 SEND_B1.s3->P0 RECV_B0.s2<-P0 B0.s1 SEND_B0.s1->P0 RECV_B1.s2<-P0 B1.s1 SEND_B1.s1->P0{{$}}

// Chimera: two pipelines in opposite directions, no V, so nothing is local.
// CHIMERA: P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 RECV_F2.s2<-P1 F2.s3 B2.s3 SEND_B2.s3->P1 RECV_F3.s2<-P1 F3.s3 B3.s3 SEND_B3.s3->P1 AR(3) RECV_B0.s1<-P1 B0.s0 RECV_B1.s1<-P1 B1.s0 AR(0){{$}}
// CHIMERA: P1: RECV_F0.s0<-P0 F0.s1 SEND_F0.s1->P2 RECV_F2.s1<-P2 F2.s2 SEND_F2.s2->P0 RECV_F1.s0<-P0 F1.s1 SEND_F1.s1->P2 RECV_F3.s1<-P2 F3.s2 SEND_F3.s2->P0 RECV_B2.s3<-P0 B2.s2 SEND_B2.s2->P2 RECV_B0.s2<-P2 B0.s1 SEND_B0.s1->P0 RECV_B3.s3<-P0 B3.s2 SEND_B3.s2->P2 AR(2) RECV_B1.s2<-P2 B1.s1 SEND_B1.s1->P0 AR(1){{$}}
// CHIMERA: P2: RECV_F2.s0<-P3 F2.s1 SEND_F2.s1->P1 RECV_F0.s1<-P1 F0.s2 SEND_F0.s2->P3 RECV_F3.s0<-P3 F3.s1 SEND_F3.s1->P1 RECV_F1.s1<-P1 F1.s2 SEND_F1.s2->P3 RECV_B0.s3<-P3 B0.s2 SEND_B0.s2->P1 RECV_B2.s2<-P1 B2.s1 SEND_B2.s1->P3 RECV_B1.s3<-P3 B1.s2 SEND_B1.s2->P1 AR(2) RECV_B3.s2<-P1 B3.s1 SEND_B3.s1->P3 AR(1){{$}}
// CHIMERA: P3: F2.s0 SEND_F2.s0->P2 F3.s0 SEND_F3.s0->P2 RECV_F0.s2<-P2 F0.s3 B0.s3 SEND_B0.s3->P2 RECV_F1.s2<-P2 F1.s3 B1.s3 SEND_B1.s3->P2 AR(3) RECV_B2.s1<-P2 B2.s0 RECV_B3.s1<-P2 B3.s0 AR(0){{$}}

// ZB-H1: the weight half needs no transfer.
// ZB: P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 RECV_B0.s1<-P1 B0.s0 W0.s0 RECV_B1.s1<-P1 B1.s0 W1.s0{{$}}
// ZB: P1: RECV_F0.s0<-P0 F0.s1 B0.s1 SEND_B0.s1->P0 RECV_F1.s0<-P0 F1.s1 B1.s1 SEND_B1.s1->P0 W0.s1 W1.s1{{$}}
// ZB-IR-LABEL: bitpipe.program @rank1 rank 1 {
// ZB-IR:      %[[G:.+]] = backward @gpt_stage1_bwd_input(%[[S:.+]]) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
// ZB-IR-NEXT: send gradient %[[G]] to 0 stage 1 microbatch 0 batch 1
// ZB-IR:      weight_grad @gpt_stage1_bwd_weight(%[[S]]) stage 1 microbatch 0{{$}}

// One device holding all four stages: every hand-off is a local copy.
// ONE: P0: F0.s0 COPY_F0.s0 F0.s1 COPY_F0.s1 F0.s2 COPY_F0.s2 F0.s3 B0.s3 COPY_B0.s3 B0.s2 COPY_B0.s2 B0.s1 COPY_B0.s1 B0.s0{{$}}

// One stream per rank (streams=shared): the sends after one compute step and
// the receives of the next share a batch, one NCCL group on the rank's only
// stream (BitPipe runs so under NCCL's rules; docs/nccl-transfers.md).
// SHARED:      module attributes {
// SHARED-SAME: bitpipe.transfer_streams = #bitpipe.transfer_streams<shared>
// SHARED-LABEL: bitpipe.program @rank3 rank 3 {
// SHARED:      recv activation from 2 stage 2 microbatch 0 batch 1 : tensor<2x4x8xf32>
// SHARED:      send activation %{{.+}} to 2 stage 4 microbatch 0 batch 2 : tensor<2x4x8xf32>
// SHARED-NEXT: recv activation from 2 stage 2 microbatch 1 batch 2
