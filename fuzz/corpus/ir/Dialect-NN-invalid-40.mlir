func.func @rms_norm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  %y = nn.rms_norm %x, %g : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}
