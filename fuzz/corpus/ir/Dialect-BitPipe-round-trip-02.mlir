module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2,
                                         pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 1,
                                       microbatch_pipelines = [0],
                                       split_backward = true>
} {
  bitpipe.program @rank1 rank 1 {
    %l = load_input targets microbatch 0 : tensor<2x16xi32>
    %s = forward(%l) stage 1 microbatch 0 : (tensor<2x16xi32>) -> !bitpipe.saved
    backward(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
    weight_grad(%s) stage 1 microbatch 0
    optimizer_step
  }
  bitpipe.program @rank0 rank 0 {
    %s = forward stage 0 microbatch 0 : () -> !bitpipe.saved
    backward(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
}
