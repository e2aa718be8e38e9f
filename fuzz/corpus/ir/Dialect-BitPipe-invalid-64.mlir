bitpipe.program @rank0 rank 0 {
  %s0 = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
  bitpipe.repeat 2 {
    bitpipe.backward(%s0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
}
