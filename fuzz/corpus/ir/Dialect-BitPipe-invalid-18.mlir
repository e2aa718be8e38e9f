bitpipe.program @rank0 rank 0 {
  %x = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
  %y, %s = bitpipe.forward @stage_0(%x) stage 0 microbatch 0 : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
}
