func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_igrad(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_wgrad()
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  bitpipe.weight_grad @stage_1_wgrad(%s) stage 1 microbatch 0
  %gx = bitpipe.backward @stage_1_igrad(%s, %x) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}
