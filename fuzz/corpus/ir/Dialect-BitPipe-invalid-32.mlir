module attributes {bitpipe.world_size = 4 : i64} {
  bitpipe.program @rank1 rank 1 {
    %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
    bitpipe.send activation %x to 4 stage 1 microbatch 0 : tensor<4xf32>
  }
}
