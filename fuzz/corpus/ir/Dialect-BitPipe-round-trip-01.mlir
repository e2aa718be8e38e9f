module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "v", devices = 2,
                                         pipelines = [[0, 1, 1, 0]]>
} {
  func.func private @stage_1(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  func.func private @stage_1_igrad(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  func.func private @stage_1_wgrad()
  func.func private @stage_2(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  func.func private @stage_2_bwd(tensor<2x16x32xf32>) -> tensor<2x16x32xf32>

  bitpipe.program @rank1 rank 1 {
    %x1 = recv activation from 0 stage 0 microbatch 0 : tensor<2x16x32xf32>
    %y1, %s1 = forward @stage_1(%x1) stage 1 microbatch 0
        : (tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    %x2 = local_copy activation %y1 stage 1 microbatch 0 : tensor<2x16x32xf32>
    %y2, %s2 = forward @stage_2(%x2) stage 2 microbatch 0
        : (tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    send activation %y2 to 0 stage 2 microbatch 0 : tensor<2x16x32xf32>

    %g3 = recv gradient from 0 stage 3 microbatch 0 : tensor<2x16x32xf32>
    %g2 = backward @stage_2_bwd(%s2, %g3) stage 2 microbatch 0
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    %g2c = local_copy gradient %g2 stage 2 microbatch 0 : tensor<2x16x32xf32>
    %g1 = backward @stage_1_igrad(%s1, %g2c) stage 1 microbatch 0
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    send gradient %g1 to 0 stage 1 microbatch 0 : tensor<2x16x32xf32>
    weight_grad @stage_1_wgrad(%s1) stage 1 microbatch 0
    optimizer_step
  }

  bitpipe.program @rank0 rank 0 {}
}
