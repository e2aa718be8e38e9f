func.func @embedding_grad(%t: tensor<2x4xi32>, %dy: tensor<2x4x6xf32>) {
  %a, %b = nn.embedding_grad %t, %dy : (tensor<2x4xi32>, tensor<2x4x6xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  return
}
