func.func @gqa_result(%qkv: tensor<2x4x16xf32>) {
  %a = nn.attention %qkv heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x4xf32>
  return
}
