func.func @rotary_odd_head_dim(%qkv: tensor<2x4x12xf32>) {
  %r = nn.rotary %qkv heads(2) kv_heads(1) : (tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  return
}
