module attributes {bitpipe.data_parallel = 70000 : i64} {}
