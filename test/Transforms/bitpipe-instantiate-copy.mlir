// RUN: bitpipe-opt %s -split-input-file --bitpipe-instantiate-copy=copy=2 -verify-diagnostics | FileCheck %s

// Two pipeline ranks, three copies: copy 2 is world ranks 4 and 5. Its
// programs, peers and groups are written out with world ranks; a group of
// pipeline ranks [0, 1] is every copy's members, [0, 1, 2, 3, 4, 5].
// CHECK: module attributes {{{.*}}bitpipe.data_parallel_copy = 2 : i64
// CHECK-LABEL: bitpipe.program @rank4 rank 4 {
// CHECK:         send activation %{{.*}} to 5 stage 0 microbatch 0 batch 0
// CHECK:         recv gradient from 5 stage 1 microbatch 0 batch 1
// CHECK:         allreduce_start stages [0, 1] group [0, 1, 2, 3, 4, 5] bucket 0
// CHECK-LABEL: bitpipe.program @rank5 rank 5 {
// CHECK:         recv activation from 4 stage 0 microbatch 0 batch 0
// CHECK:         send gradient %{{.*}} to 4 stage 1 microbatch 0 batch 1
// CHECK:         allreduce_start stages [0, 1] group [0, 1, 2, 3, 4, 5] bucket 0
module attributes {
  bitpipe.data_parallel = 3 : i64, bitpipe.world_size = 6 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y, %s = forward @s0(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %g = recv gradient from 1 stage 1 microbatch 0 batch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s, %g) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a = allreduce_start stages [0, 1] group [0, 1] bucket 0 : !bitpipe.token
    allreduce_wait %a
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l, %s = forward @s1(%x) stage 1 microbatch 0 : (tensor<2x4x8xf32>) -> (tensor<f32>, !bitpipe.saved)
    %gx = backward @s1_bwd(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx to 0 stage 1 microbatch 0 batch 1 : tensor<2x4x8xf32>
    %a = allreduce_start stages [0, 1] group [0, 1] bucket 0 : !bitpipe.token
    allreduce_wait %a
    optimizer_step
  }
}

// -----

// expected-error @+1 {{bitpipe-instantiate-copy: copy=2 is not a copy of the module's bitpipe.data_parallel = 2; expected 0..1}}
module attributes {
  bitpipe.data_parallel = 2 : i64, bitpipe.world_size = 4 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  bitpipe.program @rank0 rank 0 {
  }
  bitpipe.program @rank1 rank 1 {
  }
}

// -----

// A copy already written out is not written out again.
// expected-error @+1 {{holds data-parallel copy 0 written out with world ranks for reading}}
module attributes {
  bitpipe.data_parallel = 3 : i64, bitpipe.world_size = 6 : i64,
  bitpipe.data_parallel_copy = 0 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  bitpipe.program @rank0 rank 0 {
  }
  bitpipe.program @rank1 rank 1 {
  }
}

// -----

// expected-error @+1 {{has no bitpipe.program to instantiate; run bitpipe-schedule first}}
module attributes {
  bitpipe.data_parallel = 3 : i64, bitpipe.world_size = 6 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>
} {
}
