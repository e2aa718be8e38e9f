bitpipe.program @rank0 rank 0 {
  %s0 = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
  %last = bitpipe.repeat 3 (%c = %s0) : (!bitpipe.saved) -> !bitpipe.saved {
    %s = bitpipe.forward stage 0 microbatch 1 step 1 : () -> !bitpipe.saved
    bitpipe.backward(%c) stage 0 microbatch 1 step 1 : (!bitpipe.saved) -> ()
    bitpipe.yield %s : !bitpipe.saved
  }
  bitpipe.backward(%last) stage 0 microbatch 3 : (!bitpipe.saved) -> ()
}
