func.func @linear_weight_grad(%x: tensor<2x8xf32>, %dy: tensor<2x12xf32>) {
  %dw = nn.linear_weight_grad %x, %dy : (tensor<2x8xf32>, tensor<2x12xf32>) -> tensor<16x8xf32>
  return
}
