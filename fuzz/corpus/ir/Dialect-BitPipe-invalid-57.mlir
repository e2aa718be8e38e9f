module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>
} {
  bitpipe.program @rank0 rank 0 {
    %ids = bitpipe.load_input tokens microbatch 0 : tensor<4294967296x4294967296xi32>
  }
}
