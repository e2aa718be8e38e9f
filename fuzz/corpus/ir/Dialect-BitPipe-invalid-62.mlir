bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 2 {
    %s = bitpipe.forward stage 0 microbatch 5 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 0 microbatch 5 : (!bitpipe.saved) -> ()
  }
}
