func.func @attention_heads(%qkv: tensor<2x4x24xf32>) {
  %a = nn.attention %qkv heads(3) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}
