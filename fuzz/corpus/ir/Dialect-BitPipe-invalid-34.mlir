bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 batch 1 : tensor<4xf32>
  %y = bitpipe.recv activation from 0 stage 0 microbatch 1 batch 0 : tensor<4xf32>
}
