bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv weights from 0 stage 0 microbatch 0 : tensor<4xf32>
}
