// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-verify=transport=mpi | FileCheck %s
//
// Checked with MPI's rules: most programs here carry no transfer batches,
// which NCCL's rules need (bitpipe-verify-nccl.mlir checks those).

// The verdict of bitpipe-verify on hand-written bound programs.
//
// Valid programs: the pass succeeds, says nothing (-verify-diagnostics fails
// the run on any diagnostic nobody expected: an error, a warning or a
// remark), and prints every program op for op as it was written, in the
// same order (bitpipe-verify is an analysis; it must not rewrite).
//
// Invalid programs that pass every op verifier but not the whole-module
// checks, beyond the cases of bitpipe-verify-invalid.mlir: each must be
// rejected with its specific diagnostic, and nothing is printed for it.

// Two ranks, 1F1B over two stages and two micro-batches, with batches.
// CHECK-LABEL: bitpipe.program @rank0 rank 0 {
// CHECK-NEXT:    %[[T0:.+]] = load_input tokens microbatch 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[Y0:.+]], %[[S0:.+]] = forward @s0(%[[T0]]) stage 0 microbatch 0 :
// CHECK-NEXT:    send activation %[[Y0]] to 1 stage 0 microbatch 0 batch 0 :
// CHECK-NEXT:    %[[T1:.+]] = load_input tokens microbatch 1 : tensor<2x4xi32>
// CHECK-NEXT:    %[[Y1:.+]], %[[S1:.+]] = forward @s0(%[[T1]]) stage 0 microbatch 1 :
// CHECK-NEXT:    send activation %[[Y1]] to 1 stage 0 microbatch 1 batch 1 :
// CHECK-NEXT:    %[[G0:.+]] = recv gradient from 1 stage 1 microbatch 0 batch 1 :
// CHECK-NEXT:    backward @s0_bwd(%[[S0]], %[[G0]]) stage 0 microbatch 0 :
// CHECK-NEXT:    %[[G1:.+]] = recv gradient from 1 stage 1 microbatch 1 batch 2 :
// CHECK-NEXT:    backward @s0_bwd(%[[S1]], %[[G1]]) stage 0 microbatch 1 :
// CHECK-NEXT:    optimizer_step
// CHECK-NEXT:  }
// CHECK-LABEL: bitpipe.program @rank1 rank 1 {
// CHECK-NEXT:    %[[X0:.+]] = recv activation from 0 stage 0 microbatch 0 batch 0 :
// CHECK-NEXT:    %[[L0:.+]] = load_input targets microbatch 0 :
// CHECK-NEXT:    %{{.+}}, %[[S0:.+]] = forward @s1(%[[X0]], %[[L0]]) stage 1 microbatch 0 :
// CHECK-NEXT:    %[[GX0:.+]] = backward @s1_bwd(%[[S0]]) stage 1 microbatch 0 :
// CHECK-NEXT:    send gradient %[[GX0]] to 0 stage 1 microbatch 0 batch 1 :
// CHECK-NEXT:    %[[X1:.+]] = recv activation from 0 stage 0 microbatch 1 batch 1 :
// CHECK-NEXT:    %[[L1:.+]] = load_input targets microbatch 1 :
// CHECK-NEXT:    %{{.+}}, %[[S1:.+]] = forward @s1(%[[X1]], %[[L1]]) stage 1 microbatch 1 :
// CHECK-NEXT:    %[[GX1:.+]] = backward @s1_bwd(%[[S1]]) stage 1 microbatch 1 :
// CHECK-NEXT:    send gradient %[[GX1]] to 0 stage 1 microbatch 1 batch 2 :
// CHECK-NEXT:    optimizer_step
// CHECK-NEXT:  }
// CHECK-NEXT: }
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 1 stage 0 microbatch 1 batch 1 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 batch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %g1 = recv gradient from 1 stage 1 microbatch 1 batch 2 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 batch 1 : tensor<2x4x8xf32>
    %x1 = recv activation from 0 stage 0 microbatch 1 batch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 0 stage 1 microbatch 1 batch 2 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// Both directions of a bidirectional pipeline, with all-reduces that agree
// (sizes included).
// CHECK-LABEL: bitpipe.program @rank0 rank 0 {
// CHECK-NEXT:    %[[T0:.+]] = load_input tokens microbatch 0 :
// CHECK-NEXT:    %[[Y0:.+]], %[[S0:.+]] = forward @s0(%[[T0]]) stage 0 microbatch 0 :
// CHECK-NEXT:    send activation %[[Y0]] to 1 stage 0 microbatch 0 :
// CHECK-NEXT:    %[[X1:.+]] = recv activation from 1 stage 0 microbatch 1 :
// CHECK-NEXT:    %[[L1:.+]] = load_input targets microbatch 1 :
// CHECK-NEXT:    %{{.+}}, %[[S1:.+]] = forward @s1(%[[X1]], %[[L1]]) stage 1 microbatch 1 :
// CHECK-NEXT:    %[[GX1:.+]] = backward @s1_bwd(%[[S1]]) stage 1 microbatch 1 :
// CHECK-NEXT:    send gradient %[[GX1]] to 1 stage 1 microbatch 1 :
// CHECK-NEXT:    %[[A1:.+]] = allreduce_start stages [1] group [0, 1] bucket 0 grads ["w1"] bytes 512 : !bitpipe.token
// CHECK-NEXT:    %[[G0:.+]] = recv gradient from 1 stage 1 microbatch 0 :
// CHECK-NEXT:    backward @s0_bwd(%[[S0]], %[[G0]]) stage 0 microbatch 0 :
// CHECK-NEXT:    %[[A0:.+]] = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
// CHECK-NEXT:    allreduce_wait %[[A1]]
// CHECK-NEXT:    allreduce_wait %[[A0]]
// CHECK-NEXT:    optimizer_step
// CHECK-NEXT:  }
// CHECK-LABEL: bitpipe.program @rank1 rank 1 {
// CHECK-NEXT:    %[[T1:.+]] = load_input tokens microbatch 1 :
// CHECK-NEXT:    %[[Y1:.+]], %[[S1:.+]] = forward @s0(%[[T1]]) stage 0 microbatch 1 :
// CHECK-NEXT:    send activation %[[Y1]] to 0 stage 0 microbatch 1 :
// CHECK-NEXT:    %[[X0:.+]] = recv activation from 0 stage 0 microbatch 0 :
// CHECK-NEXT:    %[[L0:.+]] = load_input targets microbatch 0 :
// CHECK-NEXT:    %{{.+}}, %[[S0:.+]] = forward @s1(%[[X0]], %[[L0]]) stage 1 microbatch 0 :
// CHECK-NEXT:    %[[GX0:.+]] = backward @s1_bwd(%[[S0]]) stage 1 microbatch 0 :
// CHECK-NEXT:    send gradient %[[GX0]] to 0 stage 1 microbatch 0 :
// CHECK-NEXT:    %[[A1:.+]] = allreduce_start stages [1] group [0, 1] bucket 0 grads ["w1"] bytes 512 : !bitpipe.token
// CHECK-NEXT:    %[[G1:.+]] = recv gradient from 0 stage 1 microbatch 1 :
// CHECK-NEXT:    backward @s0_bwd(%[[S1]], %[[G1]]) stage 0 microbatch 1 :
// CHECK-NEXT:    %[[A0:.+]] = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
// CHECK-NEXT:    allreduce_wait %[[A1]]
// CHECK-NEXT:    allreduce_wait %[[A0]]
// CHECK-NEXT:    optimizer_step
// CHECK-NEXT:  }
// CHECK-NEXT: }
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %x1 = recv activation from 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 grads ["w1"] bytes 512 : !bitpipe.token
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 grads ["w1"] bytes 512 : !bitpipe.token
    %g1 = recv gradient from 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
}

// -----

// Programs without their stage functions (what bitpipe-schedule writes,
// before bitpipe-insert-transfers binds them): there are no transfers to
// check yet, and the pass says so instead of passing them.
// expected-error @+1 {{bitpipe-verify checks bound programs with their transfers; run bitpipe-insert-transfers first}}
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s0 = forward(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %s0 = forward(%l0) stage 1 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    optimizer_step
  }
}

// -----

// The schedule says 2 micro-batches, but both ranks run only micro-batch 0:
// every hand-off matches and nothing deadlocks, so only the completeness
// check of the schedule verifier sees it, once per missing step, at the
// module (a step that never runs has no op to point at). 2 stages x
// (forward + backward) = 4 missing steps, each placed by pipeline [[0, 1]]
// on the rank that holds its stage.
// expected-error @+4 {{forward of stage 0 for micro-batch 1 runs on no rank (the placement puts it on rank 0)}}
// expected-error @+3 {{backward of stage 0 for micro-batch 1 runs on no rank (the placement puts it on rank 0)}}
// expected-error @+2 {{forward of stage 1 for micro-batch 1 runs on no rank (the placement puts it on rank 1)}}
// expected-error @+1 {{backward of stage 1 for micro-batch 1 runs on no rank (the placement puts it on rank 1)}}
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// The two rejected modules print nothing: the output ends with the second
// valid module and the two split markers.
// CHECK:      {{^}}// {{-----$}}
// CHECK-NOT:  module
// CHECK:      {{^}}// {{-----$}}
// CHECK-NOT:  {{.}}
