func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<8xf32>) {
  %y = nn.layer_norm %x, %g, %g : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return
}
