module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2147483647, pipelines = [[0]]>} {}
