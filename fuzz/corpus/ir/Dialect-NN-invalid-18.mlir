func.func @attention_not_fused(%qkv: tensor<2x4x20xf32>) {
  %a = nn.attention %qkv heads(2) : (tensor<2x4x20xf32>) -> tensor<2x4x8xf32>
  return
}
