bitpipe.program @rank0 rank 0 {
  %s = bitpipe.forward stage 0 microbatch 0 step 1 : () -> !bitpipe.saved
}
