module attributes {bitpipe.world_size = 0 : i64} {}
