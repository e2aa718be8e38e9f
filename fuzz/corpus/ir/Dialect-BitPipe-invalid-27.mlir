func.func private @stage_0(tensor<4xf32>) -> tensor<4xf32> attributes {bitpipe.stage = 0 : i64}
bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_0(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
}
