// bitpipe-verify under NCCL's rules (docs/nccl-transfers.md): rendezvous
// sends, each batch one group, each stream's groups in order.
//
// Programs with every transfer of a rank on one stream (streams=shared)
// deadlock under these rules for interleaved 1F1B, Chimera and bitpipe-zb.
// The verifier must refuse them,
// print the grid and name the cycle; MPI's rules (buffered sends) accept
// them; one stream per channel (the default) makes the same schedules pass.

// Chimera, D = 2, N = 2: the classic crossed rendezvous. Each rank sends
// its stage-1 gradient to the other, then receives the other's; each
// receive queues behind its own rank's send.
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=2" --bitpipe-schedule="schedule=chimera microbatches=2" --bitpipe-insert-transfers="streams=shared check-result=false" --bitpipe-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHIMERA2
// CHIMERA2: error: deadlock under nccl's rules (transfers on shared streams): no rank can make progress; a cycle of 2 waits, each on the next and the last on the first (see the notes)
// CHIMERA2-NEXT: P0: F0.s0 F1.s1 >>B1.s1<< AR(1) >>B0.s0<< AR(0)
// CHIMERA2-NEXT: P1: F1.s0 F0.s1 >>B0.s1<< AR(1) >>B1.s0<< AR(0)
// CHIMERA2: note: rank 0's batch 1 (SEND_B1.s1->P1) cannot complete: its send to rank 1 needs the matching receive in rank 1's batch 2 (RECV_B1.s1<-P0), which waits on its stream (rank 1's only one) for batch 1 (SEND_B0.s1->P0) to complete
// CHIMERA2: note: rank 1's batch 1 (SEND_B0.s1->P0) cannot complete: its send to rank 0 needs the matching receive in rank 0's batch 2 (RECV_B0.s1<-P1), which waits on its stream (rank 0's only one) for batch 1 (SEND_B1.s1->P1) to complete
// CHIMERA2: note: blocked: rank 0: B0.s0 (backward of stage 0 for micro-batch 0) waits for the gradient of B0.s1 from rank 1, whose receive is in batch 2 (RECV_B0.s1<-P1), not launched: the group before it on its stream has not completed

// The same programs under MPI's rules, and the same schedule on channel
// streams under NCCL's, verify.
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=2" --bitpipe-schedule="schedule=chimera microbatches=2" --bitpipe-insert-transfers="streams=shared check-result=false" --bitpipe-verify="transport=mpi" -o /dev/null
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=2" --bitpipe-schedule="schedule=chimera microbatches=2" --bitpipe-insert-transfers --bitpipe-verify | FileCheck %s --check-prefix=CHANNEL
// CHANNEL: module attributes {
// CHANNEL-SAME: bitpipe.transfer_streams = #bitpipe.transfer_streams<channel>

// Interleaved 1F1B, D = 4 (two chunks each), N = 8: a cycle through all
// four ranks, each stuck at a forward whose receive shares a batch with a
// send its neighbour cannot take yet.
// RUN: not bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4 chunks-per-device=2" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=8" --bitpipe-insert-transfers="streams=shared check-result=false" --bitpipe-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// INTERLEAVED: error: deadlock under nccl's rules (transfers on shared streams): no rank can make progress; a cycle of 7 waits
// INTERLEAVED-NEXT: P0: F0.s0 F1.s0 F2.s0 F3.s0 F0.s4 F1.s4 F2.s4 F3.s4 F4.s0 F5.s0 F6.s0 >>B0.s4<< F7.s0
// INTERLEAVED-NEXT: P1:
// INTERLEAVED-SAME: >>B1.s5<< >>F6.s1<<
// INTERLEAVED-NEXT: P2:
// INTERLEAVED-SAME: >>B2.s6<< >>F5.s2<<
// INTERLEAVED-NEXT: P3:
// INTERLEAVED-SAME: >>B3.s7<< >>F4.s3<<
// INTERLEAVED: note: rank 3 at step 13 (F4.s3) waits for the activation of F4.s2 from rank 2, received in its batch 8 (SEND_B3.s7->P2 RECV_F4.s2<-P2)
// INTERLEAVED: note: rank 3's batch 8 (SEND_B3.s7->P2 RECV_F4.s2<-P2) cannot complete: its send to rank 2 needs the matching receive in rank 2's batch 13 (SEND_F5.s2->P3 RECV_B3.s7<-P3), which rank 2 has not issued: its program has not reached it
// INTERLEAVED: note: rank 2 at step 13 (F5.s2) waits
// INTERLEAVED: note: rank 1 at step 13 (F6.s1) waits
// INTERLEAVED: note: rank 0's batch 11 (SEND_B0.s4->P3) cannot complete
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4 chunks-per-device=2" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=8" --bitpipe-insert-transfers --bitpipe-verify -o /dev/null

// Chimera, D = 4, N = 8, and bitpipe-zb, D = 4, N = 8 (its split backward):
// refused with a cycle on shared streams, accepted on channel streams.
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=4" --bitpipe-schedule="schedule=chimera microbatches=8" --bitpipe-insert-transfers="streams=shared check-result=false" --bitpipe-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=CYCLE
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=4" --bitpipe-schedule="schedule=chimera microbatches=8" --bitpipe-insert-transfers --bitpipe-verify -o /dev/null
// RUN: not bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward=split --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe-zb microbatches=8" --bitpipe-insert-transfers="streams=shared check-result=false" --bitpipe-verify -o /dev/null 2>&1 | FileCheck %s --check-prefix=CYCLE
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward=split --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe-zb microbatches=8" --bitpipe-insert-transfers --bitpipe-verify -o /dev/null
// The periodic order and its split form, under NCCL's rules and MPI's.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe-periodic microbatches=9" --bitpipe-insert-transfers --bitpipe-verify -o /dev/null
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe-periodic microbatches=16" --bitpipe-insert-transfers --bitpipe-verify="transport=mpi" -o /dev/null
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward=split --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe-periodic-zb microbatches=16" --bitpipe-insert-transfers --bitpipe-verify -o /dev/null
// CYCLE: error: deadlock under nccl's rules (transfers on shared streams): no rank can make progress; a cycle of
// CYCLE: note: rank {{[0-9]+}}{{.*}} batch {{[0-9]+}}
// CYCLE: note: blocked: rank {{[0-9]+}}: 

// bitpipe-insert-transfers checks its own result under NCCL's rules too:
// asked for shared streams on such a schedule, it fails and leaves the
// module as it was.
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional devices=2" --bitpipe-schedule="schedule=chimera microbatches=2" --bitpipe-insert-transfers="streams=shared" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INSERT
// INSERT: error: the programs with their transfers do not verify:
// INSERT-NEXT: deadlock: no rank can make progress
// INSERT-NEXT: a cycle of 2 waits
