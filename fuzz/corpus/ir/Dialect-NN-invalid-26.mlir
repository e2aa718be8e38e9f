func.func @layer_norm_grad(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x8xf32>) {
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>)
  return
}
