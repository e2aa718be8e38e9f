func.func @layer_norm_grad_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  %a, %b, %c = nn.layer_norm_grad %x, %g, %x {epsilon = 2.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}
