func.func @attention_zero_heads(%qkv: tensor<2x4x24xf32>) {
  %a = nn.attention %qkv heads(0) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}
