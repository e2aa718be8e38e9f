bitpipe.program @rank0 rank 0 {
  %s = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
  bitpipe.backward(%s) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
}
