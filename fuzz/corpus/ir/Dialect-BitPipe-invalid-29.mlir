func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_bwd_input(tensor<4xf32> {bitpipe.grad_of_result = 0 : i64}) -> tensor<4xf32>
func.func private @stage_1_bwd_weight(tensor<4xf32> {bitpipe.stash = 0 : i64}, tensor<4xf32>) -> (tensor<4x4xf32> {nn.param = "w"})
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %gx = bitpipe.backward @stage_1_bwd_input(%s, %x) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
  bitpipe.weight_grad @stage_1_bwd_weight(%s) stage 1 microbatch 0
}
