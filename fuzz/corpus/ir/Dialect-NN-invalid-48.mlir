func.func @gqa_zero_kv_heads(%qkv: tensor<2x4x16xf32>) {
  %a = nn.attention %qkv heads(2) kv_heads(0) : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  return
}
