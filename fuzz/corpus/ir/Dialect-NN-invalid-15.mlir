func.func @linear_scalar(%x: tensor<f32>, %w: tensor<16x8xf32>) {
  %y = nn.linear %x, %w : (tensor<f32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}
