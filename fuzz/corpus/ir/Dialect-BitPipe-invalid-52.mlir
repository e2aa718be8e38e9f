bitpipe.program @rank0 rank 0 {
  %y, %s = bitpipe.forward stage 0 microbatch 0 : () -> (tensor<2x16x32xf32>, !bitpipe.saved)
}
