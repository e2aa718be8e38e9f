func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = nn.gelu %x {nn.cost = {fwd_flops = 1 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
