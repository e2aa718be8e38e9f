bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<4xf32>
  %s = bitpipe.forward stage 1 microbatch 0 : () -> !bitpipe.saved
  %y = bitpipe.recv activation from 0 stage 0 microbatch 1 batch 0 : tensor<4xf32>
}
