module attributes {bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 4, pipelines = [[0, 1, 2, 3], [3, 2, 1]]>} {}
