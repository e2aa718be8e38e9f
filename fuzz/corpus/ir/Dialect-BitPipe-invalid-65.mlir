module attributes {
  bitpipe.world_size = 2 : i64
} {
  bitpipe.program @rank0 rank 0 {
    %g = bitpipe.recv gradient from 1 stage 1 microbatch 0 batch 0 : tensor<2x4xf32>
    %last = bitpipe.repeat 2 (%c = %g) : (tensor<2x4xf32>) -> tensor<4x4xf32> {
      %h = bitpipe.recv gradient from 1 stage 1 microbatch 1 step 1 batch 1 step 1 : tensor<4x4xf32>
      bitpipe.yield %h : tensor<4x4xf32>
    }
  }
}
