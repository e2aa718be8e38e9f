bitpipe.program @rank1 rank 1 {
  %s = bitpipe.forward stage 1 microbatch 0 : () -> !bitpipe.saved
  %g = bitpipe.recv gradient from 0 stage 2 microbatch 0 : tensor<2x16x32xf32>
  bitpipe.backward(%s, %g) stage 1 microbatch 0 : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
}
