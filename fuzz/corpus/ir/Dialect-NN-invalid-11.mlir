func.func @layer_norm_element_type(%x: tensor<2x8xbf16>, %g: tensor<8xf32>) {
  %y = nn.layer_norm %x, %g, %g : (tensor<2x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xbf16>
  return
}
