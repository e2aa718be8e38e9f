bitpipe.program @rank0 rank 0 {
  %ids = load_input tokens microbatch 0 : tensor<2x16xi32>
  %s0 = forward(%ids) stage 0 microbatch 0 : (tensor<2x16xi32>) -> !bitpipe.saved
  %last = repeat 3 (%c = %s0) : (!bitpipe.saved) -> !bitpipe.saved {
    %next = load_input tokens microbatch 1 step 1 : tensor<2x16xi32>
    %s = forward(%next) stage 0 microbatch 1 step 1 : (tensor<2x16xi32>) -> !bitpipe.saved
    backward(%c) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
    yield %s : !bitpipe.saved
  }
  backward(%last) stage 0 microbatch 3 : (!bitpipe.saved) -> ()
  repeat 2 {
    %g = recv gradient from 1 stage 1 microbatch 4 step 2 batch 7 step 3 : tensor<2x16x32xf32>
    send gradient %g to 1 stage 1 microbatch 4 step 2 batch 8 step 3 : tensor<2x16x32xf32>
  }
}
