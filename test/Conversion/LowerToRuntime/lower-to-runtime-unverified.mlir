// RUN: rm -f %t.ll
// RUN: bitpipe-opt %s -verify-diagnostics --bitpipe-lower-to-runtime -o /dev/null
// RUN: not bitpipe-opt %s --bitpipe-lower-to-runtime -o %t.ll 2>&1 | FileCheck %s
// RUN: not ls %t.ll

// bitpipe-lower-to-runtime verifies the per-rank programs before it lowers
// them: programs that bitpipe-verify rejects must never become an
// executable (this one, a receive without its send, used to lower, and its
// executable waited for the message until the communication timeout).
// CHECK: error: rank 1 receives the activation of stage 0 micro-batch 1 (F1.s0) from rank 0, but rank 0 has no matching send (bitpipe.send activation to 1 stage 0 microbatch 1)
// CHECK-NOT: llvm.func

// A receive that no send matches.
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
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %g1 = recv gradient from 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    // expected-error @+1 {{rank 1 receives the activation of stage 0 micro-batch 1 (F1.s0) from rank 0, but rank 0 has no matching send (bitpipe.send activation to 1 stage 0 microbatch 1)}}
    %x1 = recv activation from 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    optimizer_step
  }
}
