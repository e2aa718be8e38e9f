func.func @embedding_wpe_rank(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8x1xf32>) {
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8x1xf32>) -> tensor<2x4x8xf32>
  return
}
