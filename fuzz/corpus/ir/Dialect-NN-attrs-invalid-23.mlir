func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = nn.gelu %x {nn.layer = -1} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
