bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<2x16x32xf32>
  %s = bitpipe.forward(%x) stage 1 microbatch 0 : (tensor<2x16x32xf32>) -> !bitpipe.saved
}
