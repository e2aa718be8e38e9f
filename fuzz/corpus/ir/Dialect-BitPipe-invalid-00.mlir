module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 4, pipelines = [[0, 4, 2, 3]]>} {}
