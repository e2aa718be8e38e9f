func.func @rotary_grad(%d: tensor<2x4x16xf32>) {
  %r = nn.rotary_grad %d heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  return
}
