func.func @linear_in_features(%x: tensor<2x8xf32>, %w: tensor<16x6xf32>) {
  %y = nn.linear %x, %w : (tensor<2x8xf32>, tensor<16x6xf32>) -> tensor<2x16xf32>
  return
}
