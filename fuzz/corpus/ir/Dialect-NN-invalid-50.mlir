func.func @rotary_base(%qkv: tensor<2x4x16xf32>) {
  %r = nn.rotary %qkv heads(2) kv_heads(1) {base = -1.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}
