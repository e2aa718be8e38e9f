func.func @result_type_mismatch(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x9xf32>
  return
}
