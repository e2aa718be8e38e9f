func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_bwd(tensor<4xf32>) -> tensor<4xf32>
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 2 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 2 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %g = bitpipe.recv gradient from 1 stage 2 microbatch 3 : tensor<4xf32>
  %gx = bitpipe.backward @stage_1_bwd(%s, %g) stage 1 microbatch 3 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}
