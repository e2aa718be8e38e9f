// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-verify="require-allreduce transport=mpi"
// RUN: bitpipe-opt %s -split-input-file --bitpipe-verify=transport=mpi | FileCheck %s --check-prefix=LATER
//
// Checked with MPI's rules: the programs carry no transfer batches, which
// NCCL's rules need (bitpipe-verify-nccl.mlir checks those).

// With require-allreduce (as bitpipe-pipeline runs it, after
// bitpipe-insert-allreduce), a stage held by two ranks whose gradients
// neither all-reduces is an error on each holder's program: the replicas
// would drift apart. Without the option the same programs are fine: their
// all-reduces may still be inserted.
// LATER: bitpipe.program @rank0
// LATER: bitpipe.program @rank1

module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  // expected-error @+2 {{rank 0 never all-reduces stage 0, which is replicated on ranks {0,1}}}
  // expected-error @+1 {{rank 0 never all-reduces stage 1, which is replicated on ranks {0,1}}}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %x1 = recv activation from 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  // expected-error @+2 {{rank 1 never all-reduces stage 0, which is replicated on ranks {0,1}}}
  // expected-error @+1 {{rank 1 never all-reduces stage 1, which is replicated on ranks {0,1}}}
  bitpipe.program @rank1 rank 1 {
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %g1 = recv gradient from 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
}
