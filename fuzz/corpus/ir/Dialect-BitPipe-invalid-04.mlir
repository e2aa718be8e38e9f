module attributes {bitpipe.placement = "v"} {}
