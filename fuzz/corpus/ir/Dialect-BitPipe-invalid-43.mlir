module attributes {bitpipe.world_size = 4 : i64} {
  bitpipe.program @rank0 rank 0 {
    %t = bitpipe.allreduce_start stages [4, 7] group [0, 7] bucket 0 : !bitpipe.token
    bitpipe.allreduce_wait %t
  }
}
