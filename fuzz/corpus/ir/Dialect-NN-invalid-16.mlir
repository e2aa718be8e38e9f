func.func @linear_element_type(%x: tensor<2x8xf32>, %w: tensor<16x8xbf16>) {
  %y = nn.linear %x, %w : (tensor<2x8xf32>, tensor<16x8xbf16>) -> tensor<2x16xf32>
  return
}
