func.func @elements_overflow(%x: tensor<4294967296x4294967296xf32>) {
  %y = nn.gelu %x : (tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  return
}
