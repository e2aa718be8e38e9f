func.func @gqa_width(%qkv: tensor<2x4x18xf32>) {
  %a = nn.attention %qkv heads(2) kv_heads(1) : (tensor<2x4x18xf32>) -> tensor<2x4x8xf32>
  return
}
