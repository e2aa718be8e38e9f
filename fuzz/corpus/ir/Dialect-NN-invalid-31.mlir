func.func @gelu_grad(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>) {
  %d = nn.gelu_grad %x, %dy : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}
