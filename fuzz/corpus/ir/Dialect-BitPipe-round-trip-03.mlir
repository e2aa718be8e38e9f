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

  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y, %s = forward @s0(%t) stage 0 microbatch 0
        : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %g = recv gradient from 1 stage 1 microbatch 0 batch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s, %g) stage 0 microbatch 0
        : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
  }

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
