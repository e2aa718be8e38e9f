func.func @linear_input_grad(%dy: tensor<2x16xf32>, %w: tensor<16x8xf32>) {
  %dx = nn.linear_input_grad %dy, %w : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x6xf32>
  return
}
