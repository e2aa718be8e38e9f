module attributes {bitpipe.placement = #bitpipe.placement<kind = "zigzag", devices = 2, pipelines = [[0, 1]]>} {}
