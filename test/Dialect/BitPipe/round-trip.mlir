// RUN: bitpipe-opt %s -split-input-file | bitpipe-opt -split-input-file | FileCheck %s
// RUN: bitpipe-opt %s -split-input-file --mlir-print-op-generic | bitpipe-opt -split-input-file | FileCheck %s

// Two ranks, two stages, two micro-batches, bidirectional (Chimera/BitPipe
// without the V): micro-batch 0 runs down (s0 on rank 0, s1 on rank 1),
// micro-batch 1 runs up (s0 on rank 1, s1 on rank 0). Both ranks hold both
// stages and all-reduce each one's gradients right after its last backward.
//
//   P0: F0.s0 F1.s1 B1.s1 AR(1) B0.s0 AR(0)
//   P1: F1.s0 F0.s1 B0.s1 AR(1) B1.s0 AR(0)

// CHECK: module attributes {bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = {{\[}}[0, 1], [1, 0]]>, bitpipe.world_size = 2 : i64}
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2,
                                         pipelines = [[0, 1], [1, 0]]>
} {
  // Stage functions (outlined by bitpipe-partition and
  // bitpipe-generate-backward; declarations suffice here).
  func.func private @stage_0(tensor<2x16xi32>) -> tensor<2x16x32xf32>
  func.func private @stage_0_bwd(tensor<2x16x32xf32>)
  func.func private @stage_1(tensor<2x16x32xf32>, tensor<2x16xi32>) -> tensor<f32>
  func.func private @stage_1_bwd() -> tensor<2x16x32xf32>

  // CHECK-LABEL: bitpipe.program @rank0 rank 0 {
  bitpipe.program @rank0 rank 0 {
    // CHECK-NEXT: %[[IDS:.+]] = load_input tokens microbatch 0 : tensor<2x16xi32>
    // CHECK-NEXT: %[[Y:.+]], %[[SAVED0:.+]] = forward @stage_0(%[[IDS]]) stage 0 microbatch 0 : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    // CHECK-NEXT: send activation %[[Y]] to 1 stage 0 microbatch 0 : tensor<2x16x32xf32>
    // Attributes of the user's own (discardable ones) print after what the
    // format prints, in name order, and only those.
    // CHECK-NEXT: send activation %[[Y]] to 1 stage 0 microbatch 0 {a.note = "again", z.note = 2 : i64} : tensor<2x16x32xf32>
    %ids = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
    %y, %saved0 = bitpipe.forward @stage_0(%ids) stage 0 microbatch 0
        : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    bitpipe.send activation %y to 1 stage 0 microbatch 0 : tensor<2x16x32xf32>
    bitpipe.send activation %y to 1 stage 0 microbatch 0 {z.note = 2 : i64, a.note = "again"} : tensor<2x16x32xf32>

    // CHECK-NEXT: %[[X:.+]] = recv activation from 1 stage 0 microbatch 1 : tensor<2x16x32xf32>
    // CHECK-NEXT: %[[TGT:.+]] = load_input targets microbatch 1 : tensor<2x16xi32>
    // CHECK-NEXT: %[[LOSS:.+]], %[[SAVED1:.+]] = forward @stage_1(%[[X]], %[[TGT]]) stage 1 microbatch 1 : (tensor<2x16x32xf32>, tensor<2x16xi32>) -> (tensor<f32>, !bitpipe.saved)
    %x = bitpipe.recv activation from 1 stage 0 microbatch 1 : tensor<2x16x32xf32>
    %tgt = bitpipe.load_input targets microbatch 1 : tensor<2x16xi32>
    %loss, %saved1 = bitpipe.forward @stage_1(%x, %tgt) stage 1 microbatch 1
        : (tensor<2x16x32xf32>, tensor<2x16xi32>) -> (tensor<f32>, !bitpipe.saved)

    // CHECK-NEXT: %[[GX:.+]] = backward @stage_1_bwd(%[[SAVED1]]) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x16x32xf32>
    // CHECK-NEXT: send gradient %[[GX]] to 1 stage 1 microbatch 1 : tensor<2x16x32xf32>
    // CHECK-NEXT: %[[T1:.+]] = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
    %gx = bitpipe.backward @stage_1_bwd(%saved1) stage 1 microbatch 1
        : (!bitpipe.saved) -> tensor<2x16x32xf32>
    bitpipe.send gradient %gx to 1 stage 1 microbatch 1 : tensor<2x16x32xf32>
    %t1 = bitpipe.allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token

    // CHECK-NEXT: %[[GY:.+]] = recv gradient from 1 stage 1 microbatch 0 : tensor<2x16x32xf32>
    // CHECK-NEXT: backward @stage_0_bwd(%[[SAVED0]], %[[GY]]) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
    // CHECK-NEXT: %[[T0:.+]] = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    %gy = bitpipe.recv gradient from 1 stage 1 microbatch 0 : tensor<2x16x32xf32>
    bitpipe.backward @stage_0_bwd(%saved0, %gy) stage 0 microbatch 0
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
    %t0 = bitpipe.allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token

    // CHECK-NEXT: allreduce_wait %[[T1]]
    // CHECK-NEXT: allreduce_wait %[[T0]]
    // CHECK-NEXT: optimizer_step
    // CHECK-NEXT: }
    bitpipe.allreduce_wait %t1
    bitpipe.allreduce_wait %t0
    bitpipe.optimizer_step
  }

  // The prefix may be left out inside a program, as the printer does.
  // CHECK-LABEL: bitpipe.program @rank1 rank 1 attributes {a.note} {
  bitpipe.program @rank1 rank 1 attributes {a.note} {
    // CHECK-NEXT: %[[IDS:.+]] = load_input tokens microbatch 1
    // CHECK-NEXT: %[[Y:.+]], %[[SAVED1:.+]] = forward @stage_0(%[[IDS]]) stage 0 microbatch 1
    // CHECK-NEXT: send activation %[[Y]] to 0 stage 0 microbatch 1
    %ids = load_input tokens microbatch 1 : tensor<2x16xi32>
    %y, %saved1 = forward @stage_0(%ids) stage 0 microbatch 1
        : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    send activation %y to 0 stage 0 microbatch 1 : tensor<2x16x32xf32>

    // CHECK-NEXT: %[[X:.+]] = recv activation from 0 stage 0 microbatch 0
    // CHECK-NEXT: %[[TGT:.+]] = load_input targets microbatch 0
    // CHECK-NEXT: %[[LOSS:.+]], %[[SAVED0:.+]] = forward @stage_1(%[[X]], %[[TGT]]) stage 1 microbatch 0
    %x = recv activation from 0 stage 0 microbatch 0 : tensor<2x16x32xf32>
    %tgt = load_input targets microbatch 0 : tensor<2x16xi32>
    %loss, %saved0 = forward @stage_1(%x, %tgt) stage 1 microbatch 0
        : (tensor<2x16x32xf32>, tensor<2x16xi32>) -> (tensor<f32>, !bitpipe.saved)

    // CHECK-NEXT: %[[GX:.+]] = backward @stage_1_bwd(%[[SAVED0]]) stage 1 microbatch 0
    // CHECK-NEXT: send gradient %[[GX]] to 0 stage 1 microbatch 0
    // CHECK-NEXT: %[[T1:.+]] = allreduce_start stages [1] group [0, 1] bucket 0
    %gx = backward @stage_1_bwd(%saved0) stage 1 microbatch 0
        : (!bitpipe.saved) -> tensor<2x16x32xf32>
    send gradient %gx to 0 stage 1 microbatch 0 : tensor<2x16x32xf32>
    %t1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token

    // CHECK-NEXT: %[[GY:.+]] = recv gradient from 0 stage 1 microbatch 1
    // CHECK-NEXT: backward @stage_0_bwd(%[[SAVED1]], %[[GY]]) stage 0 microbatch 1
    // CHECK-NEXT: %[[T0:.+]] = allreduce_start stages [0] group [0, 1] bucket 1
    %gy = recv gradient from 0 stage 1 microbatch 1 : tensor<2x16x32xf32>
    backward @stage_0_bwd(%saved1, %gy) stage 0 microbatch 1
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
    %t0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token

    // CHECK-NEXT: allreduce_wait %[[T1]]
    // CHECK-NEXT: allreduce_wait %[[T0]]
    // CHECK-NEXT: optimizer_step
    allreduce_wait %t1
    allreduce_wait %t0
    optimizer_step
  }
}

// -----

// The bottom of a V: stages 1 and 2 both sit on device 1, so the hand-off is
// a local copy, and a split backward (input gradient, then weight gradient).

// CHECK: #bitpipe.placement<kind = "v", devices = 2, pipelines = {{\[}}[0, 1, 1, 0]]>
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "v", devices = 2,
                                         pipelines = [[0, 1, 1, 0]]>
} {
  func.func private @stage_1(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  func.func private @stage_1_igrad(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  func.func private @stage_1_wgrad()
  func.func private @stage_2(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  func.func private @stage_2_bwd(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>

  // CHECK-LABEL: bitpipe.program @rank1 rank 1 attributes {a.note} {
  bitpipe.program @rank1 rank 1 attributes {a.note} {
    // CHECK-NEXT: %[[X1:.+]] = recv activation from 0 stage 0 microbatch 0
    // CHECK-NEXT: %[[Y1:.+]], %[[S1:.+]] = forward @stage_1(%[[X1]]) stage 1 microbatch 0
    // CHECK-NEXT: %[[X2:.+]] = local_copy activation %[[Y1]] stage 1 microbatch 0 : tensor<2x16x32xf32>
    // CHECK-NEXT: %[[Y2:.+]], %[[S2:.+]] = forward @stage_2(%[[X2]]) stage 2 microbatch 0
    // CHECK-NEXT: send activation %[[Y2]] to 0 stage 2 microbatch 0
    %x1 = recv activation from 0 stage 0 microbatch 0 : tensor<2x16x32xf32>
    %y1, %s1 = forward @stage_1(%x1) stage 1 microbatch 0
        : (tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    %x2 = local_copy activation %y1 stage 1 microbatch 0 : tensor<2x16x32xf32>
    %y2, %s2 = forward @stage_2(%x2) stage 2 microbatch 0
        : (tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    send activation %y2 to 0 stage 2 microbatch 0 : tensor<2x16x32xf32>

    // CHECK-NEXT: %[[G3:.+]] = recv gradient from 0 stage 3 microbatch 0
    // CHECK-NEXT: %[[G2:.+]] = backward @stage_2_bwd(%[[S2]], %[[G3]]) stage 2 microbatch 0
    // CHECK-NEXT: %[[G2C:.+]] = local_copy gradient %[[G2]] stage 2 microbatch 0
    // CHECK-NEXT: %[[G1:.+]] = backward @stage_1_igrad(%[[S1]], %[[G2C]]) stage 1 microbatch 0
    // CHECK-NEXT: send gradient %[[G1]] to 0 stage 1 microbatch 0
    // CHECK-NEXT: weight_grad @stage_1_wgrad(%[[S1]]) stage 1 microbatch 0{{$}}
    %g3 = recv gradient from 0 stage 3 microbatch 0 : tensor<2x16x32xf32>
    %g2 = backward @stage_2_bwd(%s2, %g3) stage 2 microbatch 0
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    %g2c = local_copy gradient %g2 stage 2 microbatch 0 : tensor<2x16x32xf32>
    %g1 = backward @stage_1_igrad(%s1, %g2c) stage 1 microbatch 0
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    send gradient %g1 to 0 stage 1 microbatch 0 : tensor<2x16x32xf32>
    weight_grad @stage_1_wgrad(%s1) stage 1 microbatch 0
    // CHECK-NEXT: optimizer_step
    optimizer_step
  }

  // An empty program round-trips.
  // CHECK-LABEL: bitpipe.program @rank0 rank 0 {
  // CHECK-NEXT: }
  bitpipe.program @rank0 rank 0 {}
}

// -----

// The unbound form bitpipe-schedule writes: the compute order before the
// tensors between stages exist. Only training inputs are operands; the saved
// handle still ties each backward and weight_grad to its own forward.

// CHECK: bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 1, microbatch_pipelines = [0], split_backward = true>
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2,
                                         pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 1,
                                       microbatch_pipelines = [0],
                                       split_backward = true>
} {
  // CHECK-LABEL: bitpipe.program @rank1 rank 1 {
  // CHECK-NEXT: %[[L:.+]] = load_input targets microbatch 0 : tensor<2x16xi32>
  // CHECK-NEXT: %[[S:.+]] = forward(%[[L]]) stage 1 microbatch 0 : (tensor<2x16xi32>) -> !bitpipe.saved
  // CHECK-NEXT: backward(%[[S]]) stage 1 microbatch 0 : (!bitpipe.saved) -> (){{$}}
  // CHECK-NEXT: weight_grad(%[[S]]) stage 1 microbatch 0{{$}}
  // CHECK-NEXT: optimizer_step
  bitpipe.program @rank1 rank 1 {
    %l = load_input targets microbatch 0 : tensor<2x16xi32>
    %s = forward(%l) stage 1 microbatch 0 : (tensor<2x16xi32>) -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    weight_grad(%s) stage 1 microbatch 0
    optimizer_step
  }
  // A stage without training inputs prints no parentheses.
  // CHECK-LABEL: bitpipe.program @rank0 rank 0 {
  // CHECK-NEXT: %[[S:.+]] = forward stage 0 microbatch 0 : () -> !bitpipe.saved
  bitpipe.program @rank0 rank 0 {
    %s = forward stage 0 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
}

// -----

// The binding rule: a bound op passes only what is not stage state, so the
// callees' parameters (nn.param), saved values (bitpipe.saved), the forward
// arguments a backward reads (bitpipe.forward_arg) and the stash of a split
// backward (bitpipe.stash) are not operands or results. Transfers that run
// together carry one `batch` number.

module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2,
                                         pipelines = [[0, 1]]>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"})
      -> (tensor<2x4x8xf32>, tensor<2x4x8xf32> {bitpipe.saved = 0 : i64})
      attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4xi32> {bitpipe.forward_arg = 0 : i64, nn.input = "tokens"},
                            tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64})
      -> (tensor<16x8xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "wte"})
      attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<8x8xf32> {nn.param = "w"}, tensor<2x4xi32> {nn.input = "labels"})
      -> (tensor<f32>, tensor<2x4x8xf32> {bitpipe.saved = 0 : i64})
      attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd_input(tensor<8x8xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "w"},
                                  tensor<2x4x8xf32> {bitpipe.saved = 0 : i64})
      -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}, tensor<2x4x8xf32> {bitpipe.stash = 0 : i64})
      attributes {bitpipe.backward_of = @s1}
  func.func private @s1_bwd_weight(tensor<2x4x8xf32> {bitpipe.saved = 0 : i64},
                                   tensor<2x4x8xf32> {bitpipe.stash = 0 : i64})
      -> (tensor<8x8xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "w"})
      attributes {bitpipe.backward_of = @s1}

  // CHECK-LABEL: bitpipe.program @rank0 rank 0 {
  // CHECK-NEXT: %[[T:.+]] = load_input tokens microbatch 0
  // CHECK-NEXT: %[[Y:.+]], %[[S:.+]] = forward @s0(%[[T]]) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
  // CHECK-NEXT: send activation %[[Y]] to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
  // CHECK-NEXT: %[[G:.+]] = recv gradient from 1 stage 1 microbatch 0 batch 0 : tensor<2x4x8xf32>
  // CHECK-NEXT: backward @s0_bwd(%[[S]], %[[G]]) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y, %s = forward @s0(%t) stage 0 microbatch 0
        : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %g = recv gradient from 1 stage 1 microbatch 0 batch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s, %g) stage 0 microbatch 0
        : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
  }

  // CHECK-LABEL: bitpipe.program @rank1 rank 1 {
  // CHECK-NEXT: %[[X:.+]] = recv activation from 0 stage 0 microbatch 0 batch 0
  // CHECK-NEXT: %[[L:.+]] = load_input targets microbatch 0
  // CHECK-NEXT: %[[LOSS:.+]], %[[S:.+]] = forward @s1(%[[X]], %[[L]]) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  // CHECK-NEXT: %[[GX:.+]] = backward @s1_bwd_input(%[[S]]) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
  // CHECK-NEXT: send gradient %[[GX]] to 0 stage 1 microbatch 0 batch 1
  // CHECK-NEXT: weight_grad @s1_bwd_weight(%[[S]]) stage 1 microbatch 0{{$}}
  bitpipe.program @rank1 rank 1 {
    %x = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @s1(%x, %l) stage 1 microbatch 0
        : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx = backward @s1_bwd_input(%s) stage 1 microbatch 0
        : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx to 0 stage 1 microbatch 0 batch 1 : tensor<2x4x8xf32>
    weight_grad @s1_bwd_weight(%s) stage 1 microbatch 0
  }
}

// -----

// Data parallelism: a group names pipeline ranks and stands for them in
// every copy, so one pipeline rank is a group of K ranks when K > 1.
// CHECK: module attributes {bitpipe.data_parallel = 2 : i64, bitpipe.world_size = 4 : i64}
// CHECK-LABEL: bitpipe.program @rank0 rank 0 {
// CHECK-NEXT: %[[T:.+]] = allreduce_start stages [0] group [0] bucket 0 : !bitpipe.token
module attributes {bitpipe.data_parallel = 2 : i64, bitpipe.world_size = 4 : i64} {
  bitpipe.program @rank0 rank 0 {
    %t = allreduce_start stages [0] group [0] bucket 0 : !bitpipe.token
    allreduce_wait %t
  }
}

// -----

// A 1F1B-like steady state kept as a repeat (docs/repetition.md): each
// repetition loads, runs and sends micro-batch k + 1 and runs the backward
// of micro-batch k, whose handle the previous repetition kept; the window
// of one handle is the body's argument, rotated by the yield, and the
// repeat's result is the last handle, for the backward after it.

// CHECK-LABEL: bitpipe.program @rank0 rank 0 {
bitpipe.program @rank0 rank 0 {
  // CHECK-NEXT: %[[IDS:.+]] = load_input tokens microbatch 0 : tensor<2x16xi32>
  // CHECK-NEXT: %[[S0:.+]] = forward(%[[IDS]]) stage 0 microbatch 0 : (tensor<2x16xi32>) -> !bitpipe.saved
  %ids = load_input tokens microbatch 0 : tensor<2x16xi32>
  %s0 = forward(%ids) stage 0 microbatch 0 : (tensor<2x16xi32>) -> !bitpipe.saved
  // CHECK-NEXT: %[[LAST:.+]] = repeat 3 (%[[C:.+]] = %[[S0]]) : (!bitpipe.saved) -> !bitpipe.saved {
  // CHECK-NEXT:   %[[NEXT_IDS:.+]] = load_input tokens microbatch 1 step 1 : tensor<2x16xi32>
  // CHECK-NEXT:   %[[S:.+]] = forward(%[[NEXT_IDS]]) stage 0 microbatch 1 step 1 : (tensor<2x16xi32>) -> !bitpipe.saved
  // CHECK-NEXT:   backward(%[[C]]) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
  // CHECK-NEXT:   yield %[[S]] : !bitpipe.saved
  // CHECK-NEXT: }
  %last = repeat 3 (%c = %s0) : (!bitpipe.saved) -> !bitpipe.saved {
    %next = load_input tokens microbatch 1 step 1 : tensor<2x16xi32>
    %s = forward(%next) stage 0 microbatch 1 step 1 : (tensor<2x16xi32>) -> !bitpipe.saved
    backward(%c) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
    yield %s : !bitpipe.saved
  }
  // CHECK-NEXT: backward(%[[LAST]]) stage 0 microbatch 3 : (!bitpipe.saved) -> ()
  backward(%last) stage 0 microbatch 3 : (!bitpipe.saved) -> ()
  // A repeat with nothing to carry; transfers advance their batch too.
  // CHECK-NEXT: repeat 2 {
  // CHECK-NEXT:   %[[G:.+]] = recv gradient from 1 stage 1 microbatch 4 step 2 batch 7 step 3 : tensor<2x16x32xf32>
  // CHECK-NEXT:   send gradient %[[G]] to 1 stage 1 microbatch 4 step 2 batch 8 step 3 : tensor<2x16x32xf32>
  // CHECK-NEXT: }
  repeat 2 {
    %g = recv gradient from 1 stage 1 microbatch 4 step 2 batch 7 step 3 : tensor<2x16x32xf32>
    send gradient %g to 1 stage 1 microbatch 4 step 2 batch 8 step 3 : tensor<2x16x32xf32>
  }
}
