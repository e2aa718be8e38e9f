func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32> attributes {bitpipe.stage = 1 : i64}
func.func private @stage_2(tensor<4xf32>) -> tensor<4xf32> attributes {bitpipe.stage = 2 : i64}
func.func private @stage_2_bwd(tensor<4xf32> {bitpipe.grad_of_result = 0 : i64}) -> tensor<4xf32> attributes {bitpipe.backward_of = @stage_2}
bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %g = bitpipe.recv gradient from 0 stage 2 microbatch 0 : tensor<4xf32>
  %gx = bitpipe.backward @stage_2_bwd(%s, %g) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}
