module attributes {bitpipe.data_parallel = 1 : i64} {
  bitpipe.program @rank0 rank 0 {
    %t = bitpipe.allreduce_start stages [4, 7] group [0] bucket 0 : !bitpipe.token
    bitpipe.allreduce_wait %t
  }
}
