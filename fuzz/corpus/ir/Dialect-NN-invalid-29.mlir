func.func @attention_grad(%qkv: tensor<2x4x24xf32>, %dy: tensor<2x4x8xf32>) {
  %d = nn.attention_grad %qkv, %dy heads(2) : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}
