// RUN: rm -f %t.json
// RUN: bitpipe-opt %s -verify-diagnostics --bitpipe-lower-program-to-runtime=manifest-file=%t.json -o /dev/null
// RUN: not ls %t.json
// RUN: not bitpipe-opt %s --bitpipe-lower-to-runtime 2>&1 | FileCheck %s

// The lowering verifies the per-rank programs before it changes anything
// (verifyRankPrograms, bitpipe-verify's check): programs that bitpipe-verify
// rejects never become an executable, whether the lowering is invoked alone
// or as bitpipe-lower-to-runtime. These are program-to-runtime.mlir's,
// with rank 1's send of micro-batch 1's gradient dropped: they used to
// lower, and rank 0 waited for that gradient until the communication
// timeout.
// CHECK: error: rank 0 receives the gradient of stage 1 micro-batch 1 (B1.s1) from rank 1, but rank 1 has no matching send (bitpipe.send gradient to 0 stage 1 microbatch 1)
// CHECK-NOT: llvm.func

module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>,
  bitpipe.world_size = 2 : i64} {
  func.func private @m_stage0(tensor<8x4xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 2.0e-02>},
                              tensor<4xf32> {nn.param = "ln.bias", nn.init = #nn.init<zeros>},
                              tensor<2x4xi32> {nn.input = "tokens"})
      -> (tensor<2x4x4xf32>, tensor<2x4x4xf32> {bitpipe.saved = 0 : i64})
      attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @m_stage0_bwd}
  func.func private @m_stage0_bwd(tensor<2x4xi32> {bitpipe.forward_arg = 2 : i64, nn.input = "tokens"},
                                  tensor<2x4x4xf32> {bitpipe.saved = 0 : i64},
                                  tensor<2x4x4xf32> {bitpipe.grad_of_result = 0 : i64})
      -> (tensor<8x4xf32> {bitpipe.grad_of_arg = 0 : i64, nn.param = "wte"},
          tensor<4xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "ln.bias"})
      attributes {bitpipe.backward_of = @m_stage0}
  func.func private @m_stage1(tensor<2x4x4xf32>,
                              tensor<8x4xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 2.0e-02>},
                              tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32>
      attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @m_stage1_bwd}
  func.func private @m_stage1_bwd(tensor<2x4x4xf32> {bitpipe.forward_arg = 0 : i64},
                                  tensor<8x4xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "wte"},
                                  tensor<2x4xi32> {bitpipe.forward_arg = 2 : i64, nn.input = "labels"})
      -> (tensor<2x4x4xf32> {bitpipe.grad_of_arg = 0 : i64},
          tensor<8x4xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "wte"})
      attributes {bitpipe.backward_of = @m_stage1}
  func.func private @m(tensor<8x4xf32>, tensor<4xf32>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
      attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a0, %s0 = forward @m_stage0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x4xf32>, !bitpipe.saved)
    send activation %a0 to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x4xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %a1, %s1 = forward @m_stage0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x4xf32>, !bitpipe.saved)
    send activation %a1 to 1 stage 0 microbatch 1 batch 1 : tensor<2x4x4xf32>
    // expected-error @+1 {{rank 0 receives the gradient of stage 1 micro-batch 1 (B1.s1) from rank 1, but rank 1 has no matching send (bitpipe.send gradient to 0 stage 1 microbatch 1)}}
    %g1 = recv gradient from 1 stage 1 microbatch 1 batch 1 : tensor<2x4x4xf32>
    backward @m_stage0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x4xf32>) -> ()
    %g0 = recv gradient from 1 stage 1 microbatch 0 batch 2 : tensor<2x4x4xf32>
    backward @m_stage0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x4xf32>) -> ()
    %tok = allreduce_start stages [0] group [0, 1] bucket 0 grads ["wte"] bytes 128 : !bitpipe.token
    allreduce_wait %tok
    optimizer_step microbatches 2
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x4xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @m_stage1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %x1 = recv activation from 0 stage 0 microbatch 1 batch 1 : tensor<2x4x4xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @m_stage1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %g1 = backward @m_stage1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x4xf32>
    %g0 = backward @m_stage1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x4xf32>
    send gradient %g0 to 0 stage 1 microbatch 0 batch 3 : tensor<2x4x4xf32>
    %tok = allreduce_start stages [1] group [0, 1] bucket 0 grads ["wte"] bytes 128 : !bitpipe.token
    allreduce_wait %tok
    optimizer_step microbatches 2
  }
}
