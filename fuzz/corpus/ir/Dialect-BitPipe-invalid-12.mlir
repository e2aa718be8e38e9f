module attributes {bitpipe.world_size = 6 : i64, bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 4, pipelines = [[0, 1, 2, 3]]>} {}
