bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  bitpipe.allreduce_wait %x
}
