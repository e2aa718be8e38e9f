// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-simulate
// RUN: not bitpipe-opt %s -split-input-file --bitpipe-simulate 2>&1 | FileCheck %s
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=measured" 2>&1 | FileCheck %s --check-prefix=COSTS
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="costs=ir" 2>&1 | FileCheck %s --check-prefix=NOCOST

// COSTS: error: bitpipe-simulate: unknown costs=measured; expected unit or ir
// NOCOST: error: has no nn.cost forward FLOPs; FLOP times need bitpipe-annotate-cost

// A file that cannot be written is an error that names it and says why;
// a directory in its way is left as it is (docs/files.md).
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="trace=%t.missing/trace.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-simulate="timeline=%t.dir" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ISDIR
// RUN: test -d %t.dir
// NODIR: error: cannot write '{{.*}}.missing/trace.json': {{.*}}directory '{{.*}}.missing' does not exist
// ISDIR: error: cannot write '{{.*}}.dir': '{{.*}}.dir' is a directory; refusing to replace it with a file

// Rank 0 takes the gradients back in the other order than rank 1 sends
// them: the verifier's message, then the grid with both ends marked.
// CHECK:      error: the per-rank programs are not a valid schedule:
// CHECK-NEXT: channel rank 1 -> rank 0: rank 1's 1st send carries the gradient of B0.s1, but rank 0's 1st receive expects the gradient of B1.s1 (the two ranks order this channel differently)
// CHECK-NEXT: P0: F0.s0 F1.s0 >>B1.s0<< B0.s0{{$}}
// CHECK-NEXT: P1: F0.s1 F1.s1 >>B0.s1<< B1.s1{{$}}

// expected-error @+1 {{the per-rank programs are not a valid schedule:}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
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
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
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

// expected-error @+1 {{has no bitpipe.program for pipeline rank 1 of the placement's 2 devices}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  bitpipe.program @rank0 rank 0 {
  }
}

// -----

// The dialect checks bitpipe.schedule against the placement.
// expected-error @+1 {{'bitpipe.schedule' sends micro-batch 1 through pipeline 1, but the placement has 1}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
}

// -----

module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  // expected-error @+1 {{#bitpipe.schedule expects one entry of microbatch_pipelines per micro-batch (2), got 1}}
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0], split_backward = false>
} {
}

// -----

// Data parallelism: one program per pipeline rank, which every copy runs
// (docs/data-parallel.md); a program per world rank is refused.
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.world_size = 4 : i64, bitpipe.data_parallel = 2 : i64,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  bitpipe.program @rank0 rank 0 {
  }
  bitpipe.program @rank1 rank 1 {
  }
  // expected-error @+1 {{has rank 2, but a module holds one program per pipeline rank (0..1 for the placement's 2 devices), which every data-parallel copy runs}}
  bitpipe.program @rank2 rank 2 {
  }
}

// -----

// A copy written out for reading is not taken by passes.
// expected-error @+1 {{holds data-parallel copy 1 written out with world ranks for reading ('bitpipe.data_parallel_copy', from bitpipe-instantiate-copy); passes and the lowering take the module of one program per pipeline rank it came from}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.world_size = 4 : i64, bitpipe.data_parallel = 2 : i64,
  bitpipe.data_parallel_copy = 1 : i64,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  bitpipe.program @rank2 rank 2 {
  }
  bitpipe.program @rank3 rank 3 {
  }
}

// -----

// expected-error @+1 {{'bitpipe.data_parallel' = 2 copies of the placement's 2 devices need 'bitpipe.world_size' = 4, got 2}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.world_size = 2 : i64, bitpipe.data_parallel = 2 : i64
} {
}

// -----

// A world larger than the placement needs its copy count.
// expected-error @+1 {{has 'bitpipe.world_size' = 4, but 1 copy of 2 devices make 2 ranks; set 'bitpipe.data_parallel' (bitpipe-place dp=K)}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.world_size = 4 : i64,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
}
