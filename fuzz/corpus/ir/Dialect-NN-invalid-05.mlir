func.func @embedding_too_long(%t: tensor<2x5xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x5xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x5x8xf32>
  return
}
