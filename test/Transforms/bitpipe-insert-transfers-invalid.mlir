// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-insert-transfers -o /dev/null
// RUN: not bitpipe-opt %s -split-input-file --bitpipe-insert-transfers -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRID

// Hand-written unbound programs (as bitpipe-schedule writes them) on two
// ranks, loop placement; the stage functions are declarations with the
// attributes bitpipe-partition and bitpipe-generate-backward write.

module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  // expected-error @+1 {{has no 'bitpipe.backward'; run bitpipe-generate-backward}}
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s = forward(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
  bitpipe.program @rank1 rank 1 {
    %s = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
  }
}

// -----

// The schedule splits the backward, the stage functions do not.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 1, microbatch_pipelines = [0], split_backward = true>
} {
  // expected-error @+1 {{has no 'bitpipe.backward_input'; the schedule splits the backward: run bitpipe-generate-backward=split}}
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s0_bwd}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @s1_bwd}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s = forward(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
    weight_grad(%s) stage 0 microbatch 0
  }
  bitpipe.program @rank1 rank 1 {
    %s = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    weight_grad(%s) stage 1 microbatch 0
  }
}

// -----

// Stage 1 takes a bf16 activation, stage 0 returns f32.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s0_bwd}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) attributes {bitpipe.backward_of = @s0}
  // expected-error @+1 {{is stage 1 and takes (tensor<2x4x8xbf16>) from the previous stage, but stage 0 (@s0) returns (tensor<2x4x8xf32>)}}
  func.func private @s1(tensor<2x4x8xbf16>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @s1_bwd}
  func.func private @s1_bwd() -> (tensor<2x4x8xbf16> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s = forward(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
  bitpipe.program @rank1 rank 1 {
    %s = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
  }
}

// -----

// The loss stage's backward may not expect an output gradient.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s0_bwd}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @s1_bwd}
  // expected-error @+1 {{belongs to the last stage but takes output gradients (tensor<f32>); the loss stage seeds its gradient itself}}
  func.func private @s1_bwd(tensor<f32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s = forward(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
  bitpipe.program @rank1 rank 1 {
    %s = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
  }
}

// -----

// Programs that already have transfers: the pass runs once.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s = forward(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    // expected-error @+1 {{is already a transfer or bound; bitpipe-insert-transfers runs once, on the unbound programs of bitpipe-schedule}}
    %g = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
  bitpipe.program @rank1 rank 1 {
    %s = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
  }
}

// -----

// An order no rank can follow (hand-edited): rank 0 runs the backward of
// micro-batch 0 before the forward of micro-batch 1, which rank 1 runs
// first. The library's verifier rejects the programs with the transfers
// the pass inserted, with its grid (the failing steps marked).
// GRID: the programs with their transfers do not verify:
// GRID-NEXT: channel rank 0 -> rank 1: rank 0's 1st send carries the activation of F0.s0, but rank 1's 1st receive expects the activation of F1.s0
// GRID-NEXT: P0: >>F0.s0<< B0.s0 F1.s0 B1.s0
// GRID-NEXT: P1: >>F1.s1<< F0.s1 B0.s1 B1.s1
// GRID: deadlock: no rank can make progress
// expected-error @+1 {{the programs with their transfers do not verify:}}
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s0_bwd}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @s1_bwd}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %s0 = forward(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %s1 = forward(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%s1) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
  }
  bitpipe.program @rank1 rank 1 {
    %s1 = forward stage 1 microbatch 1 : () -> !bitpipe.saved
    %s0 = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    backward(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    backward(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> ()
  }
}
