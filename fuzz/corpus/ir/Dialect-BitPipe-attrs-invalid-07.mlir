module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = {name = "1f1b", microbatches = 1 : i64}} {}
