func.func @embedding_tokens_rank(%t: tensor<8xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  %x = nn.embedding %t, %wte, %wpe : (tensor<8xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}
