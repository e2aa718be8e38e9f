func.func @rms_norm_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %y = nn.rms_norm %x, %g {epsilon = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}
