func.func @attention_rank(%qkv: tensor<4x24xf32>) {
  %a = nn.attention %qkv heads(2) : (tensor<4x24xf32>) -> tensor<4x8xf32>
  return
}
