module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2,
                                         pipelines = [[0, 1], [1, 0]]>
} {
  func.func private @stage_0(tensor<2x16xi32>) -> tensor<2x16x32xf32>
  func.func private @stage_0_bwd(tensor<2x16x32xf32>)
  func.func private @stage_1(tensor<2x16x32xf32>, tensor<2x16xi32>) -> tensor<f32>
  func.func private @stage_1_bwd() -> tensor<2x16x32xf32>

  bitpipe.program @rank0 rank 0 {
    %ids = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
    %y, %saved0 = bitpipe.forward @stage_0(%ids) stage 0 microbatch 0
        : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    bitpipe.send activation %y to 1 stage 0 microbatch 0 : tensor<2x16x32xf32>

    %x = bitpipe.recv activation from 1 stage 0 microbatch 1 : tensor<2x16x32xf32>
    %tgt = bitpipe.load_input targets microbatch 1 : tensor<2x16xi32>
    %loss, %saved1 = bitpipe.forward @stage_1(%x, %tgt) stage 1 microbatch 1
        : (tensor<2x16x32xf32>, tensor<2x16xi32>) -> (tensor<f32>, !bitpipe.saved)

    %gx = bitpipe.backward @stage_1_bwd(%saved1) stage 1 microbatch 1
        : (!bitpipe.saved) -> tensor<2x16x32xf32>
    bitpipe.send gradient %gx to 1 stage 1 microbatch 1 : tensor<2x16x32xf32>
    %t1 = bitpipe.allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token

    %gy = bitpipe.recv gradient from 1 stage 1 microbatch 0 : tensor<2x16x32xf32>
    bitpipe.backward @stage_0_bwd(%saved0, %gy) stage 0 microbatch 0
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
    %t0 = bitpipe.allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token

    bitpipe.allreduce_wait %t1
    bitpipe.allreduce_wait %t0
    bitpipe.optimizer_step
  }

  bitpipe.program @rank1 rank 1 {
    %ids = load_input tokens microbatch 1 : tensor<2x16xi32>
    %y, %saved1 = forward @stage_0(%ids) stage 0 microbatch 1
        : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    send activation %y to 0 stage 0 microbatch 1 : tensor<2x16x32xf32>

    %x = recv activation from 0 stage 0 microbatch 0 : tensor<2x16x32xf32>
    %tgt = load_input targets microbatch 0 : tensor<2x16xi32>
    %loss, %saved0 = forward @stage_1(%x, %tgt) stage 1 microbatch 0
        : (tensor<2x16x32xf32>, tensor<2x16xi32>) -> (tensor<f32>, !bitpipe.saved)

    %gx = backward @stage_1_bwd(%saved0) stage 1 microbatch 0
        : (!bitpipe.saved) -> tensor<2x16x32xf32>
    send gradient %gx to 0 stage 1 microbatch 0 : tensor<2x16x32xf32>
    %t1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token

    %gy = recv gradient from 0 stage 1 microbatch 1 : tensor<2x16x32xf32>
    backward @stage_0_bwd(%saved1, %gy) stage 0 microbatch 1
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
    %t0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token

    allreduce_wait %t1
    allreduce_wait %t0
    optimizer_step
  }
}
