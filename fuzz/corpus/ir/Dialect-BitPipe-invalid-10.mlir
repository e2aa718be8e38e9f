module attributes {bitpipe.data_parallel_copy = -1 : i64} {}
