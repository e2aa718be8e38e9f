module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = true, note = "">
} {}
