module attributes {bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 2, pipelines = [[0, 1, 1, 0]]>} {}
