module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 0x7FC000004,
                                         pipelines = [[0, 1, 2, 3, 3, 2, 1, 0],
                                                      [3, 2, 1, 0, 0, 1, 2, 3]]>,
  bitpipe.schedule = #bitpipe.schedule<split_backward = false,
                                       note = "N=5 is not a multiple of D=4",
                                       microbatch_pipelines = [0, 0, 1, 1, 0],
                                       microbatches = 5, name = "bitpipe">
} {}
