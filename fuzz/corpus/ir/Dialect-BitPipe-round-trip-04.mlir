module attributes {bitpipe.data_parallel = 2 : i64, bitpipe.world_size = 4 : i64} {
  bitpipe.program @rank0 rank 0 {
    %t = allreduce_start stages [0] group [0] bucket 0 : !bitpipe.token
    allreduce_wait %t
  }
}
