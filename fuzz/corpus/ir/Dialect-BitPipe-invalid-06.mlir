module attributes {bitpipe.world_size = 9223372036854775807 : i64} {}
