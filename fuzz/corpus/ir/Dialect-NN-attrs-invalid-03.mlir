func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = nn.gelu %x {nn.cost = #nn.cost<fwd_flops = 1, fwd_flops = 2, bwd_flops = 2, param_bytes = 0, act_bytes = 0>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
