func.func @rms_norm_grad(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %a, %b = nn.rms_norm_grad %x, %g, %x : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}
