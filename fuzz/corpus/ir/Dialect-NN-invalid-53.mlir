func.func @gqa_grad(%qkv: tensor<2x4x16xf32>, %dy: tensor<2x4x16xf32>) {
  %d = nn.attention_grad %qkv, %dy heads(2) kv_heads(1) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}
