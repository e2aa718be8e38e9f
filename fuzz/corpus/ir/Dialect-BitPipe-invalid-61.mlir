bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 3 {
    %s = bitpipe.forward stage 0 microbatch 2 step -2 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 0 microbatch 2 step -2 : (!bitpipe.saved) -> ()
  }
}
