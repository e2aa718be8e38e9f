func.func @gelu_form(%x: tensor<2x8xf32>) {
  %y = nn.gelu %x form(sigmoid) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}
