func.func @embedding_token_type(%t: tensor<2x4xf32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xf32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}
