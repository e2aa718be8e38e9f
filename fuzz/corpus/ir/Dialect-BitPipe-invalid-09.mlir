module attributes {bitpipe.data_parallel = 2 : i64, bitpipe.data_parallel_copy = 2 : i64} {}
