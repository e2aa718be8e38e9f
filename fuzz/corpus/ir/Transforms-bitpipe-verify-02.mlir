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
