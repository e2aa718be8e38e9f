// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-simulate
// RUN: not bitpipe-opt %s -split-input-file --bitpipe-simulate 2>&1 | FileCheck %s
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=measured" 2>&1 | FileCheck %s --check-prefix=COSTS
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir" 2>&1 | FileCheck %s --check-prefix=NOCOST

// COSTS: error: bitpipe-simulate: unknown costs=measured; expected unit or ir
// NOCOST: error: has no nn.cost forward FLOPs; costs=ir needs bitpipe-annotate-cost

// Rank 0 takes the gradients back in the other order than rank 1 sends
// them: the verifier's message, then the grid with both ends marked.
// CHECK:      error: the per-rank programs are not a valid schedule:
// CHECK-NEXT: channel rank 1 -> rank 0: rank 1's 1st send carries the gradient of B0.s1, but rank 0's 1st receive expects the gradient of B1.s1 (the two ranks order this channel differently)
// CHECK-NEXT: P0: F0.s0 F1.s0 >>B1.s0<< B0.s0{{$}}
// CHECK-NEXT: P1: F0.s1 F1.s1 >>B0.s1<< B1.s1{{$}}

// expected-error @+1 {{the per-rank programs are not a valid schedule:}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = {microbatch_pipelines = array<i64: 0, 0>, microbatches = 2 : i64, name = "1f1b", split_backward = false}
} {
  bitpipe.program @rank0 rank 0 {
    %f0 = forward stage 0 microbatch 0 : () -> !bitpipe.saved
    %f1 = forward stage 0 microbatch 1 : () -> !bitpipe.saved
    backward(%f1) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
    backward(%f0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %f0 = forward stage 1 microbatch 0 : () -> !bitpipe.saved
    %f1 = forward stage 1 microbatch 1 : () -> !bitpipe.saved
    backward(%f0) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    backward(%f1) stage 1 microbatch 1 : (!bitpipe.saved) -> ()
    optimizer_step
  }
}

// -----

// A micro-batch that never runs its second stage.
// expected-error @+1 {{the per-rank programs are not a valid schedule:}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = {microbatch_pipelines = array<i64: 0>, microbatches = 1 : i64, name = "1f1b", split_backward = false}
} {
  bitpipe.program @rank0 rank 0 {
    %f0 = forward stage 0 microbatch 0 : () -> !bitpipe.saved
    backward(%f0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
  bitpipe.program @rank1 rank 1 {
  }
}

// -----

// expected-error @+1 {{has no 'bitpipe.schedule'; run bitpipe-schedule first}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>
} {
}

// -----

// expected-error @+1 {{has no bitpipe.program for rank 1 of the placement's 2 devices}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = {microbatch_pipelines = array<i64: 0>, microbatches = 1 : i64, name = "1f1b", split_backward = false}
} {
  bitpipe.program @rank0 rank 0 {
  }
}

// -----

// The dialect checks bitpipe.schedule against the placement.
// expected-error @+1 {{'bitpipe.schedule' sends micro-batch 1 through pipeline 1, but the placement has 1}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = {microbatch_pipelines = array<i64: 0, 1>, microbatches = 2 : i64, name = "1f1b", split_backward = false}
} {
}

// -----

// expected-error @+1 {{'bitpipe.schedule' expects field 'microbatch_pipelines' to be an array<i64> with one entry per micro-batch}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = {microbatch_pipelines = array<i64: 0>, microbatches = 2 : i64, name = "1f1b", split_backward = false}
} {
}
