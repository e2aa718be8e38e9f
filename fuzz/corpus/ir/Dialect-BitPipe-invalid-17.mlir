bitpipe.program @rank0 rank 0 {
  %x = bitpipe.load_input tokens microbatch -1 : tensor<2x16xi32>
}
