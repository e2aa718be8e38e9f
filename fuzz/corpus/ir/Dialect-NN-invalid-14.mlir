func.func @linear_bias(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  %y = nn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<2x16xf32>
  return
}
