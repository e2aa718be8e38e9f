func.func @rotary_result(%qkv: tensor<2x4x24xf32>) {
  %r = nn.rotary %qkv heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}
