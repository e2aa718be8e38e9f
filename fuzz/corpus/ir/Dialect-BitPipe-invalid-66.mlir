module attributes {
  bitpipe.world_size = 2 : i64
} {
  bitpipe.program @rank0 rank 0 {
    bitpipe.repeat 2 {
      %a = bitpipe.recv gradient from 1 stage 1 microbatch 0 step 1 batch 3 : tensor<2x4xf32>
      %s = bitpipe.forward stage 0 microbatch 0 step 1 : () -> !bitpipe.saved
      bitpipe.backward(%s) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
    }
  }
}
