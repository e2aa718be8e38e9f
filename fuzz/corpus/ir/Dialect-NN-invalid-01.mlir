func.func @embedding_wte_rank(%t: tensor<2x4xi32>, %wte: tensor<16xf32>, %wpe: tensor<4x8xf32>) {
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}
