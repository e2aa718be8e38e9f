module attributes {bitpipe.world_size = 100000000000000000000000 : i128} {}
