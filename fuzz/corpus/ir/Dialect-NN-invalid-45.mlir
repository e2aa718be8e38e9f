func.func @gqa_kv_heads_divide(%qkv: tensor<2x4x28xf32>) {
  %a = nn.attention %qkv heads(3) kv_heads(2) : (tensor<2x4x28xf32>) -> tensor<2x4x12xf32>
  return
}
