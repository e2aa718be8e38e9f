func.func @attention_dynamic(%qkv: tensor<2x4x?xf32>) {
  %a = nn.attention %qkv heads(2) : (tensor<2x4x?xf32>) -> tensor<2x4x8xf32>
  return
}
