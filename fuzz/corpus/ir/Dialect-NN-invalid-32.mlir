func.func @cross_entropy_grad(%l: tensor<2x16xf32>, %y: tensor<2xi32>, %dl: tensor<f32>) {
  %d = nn.cross_entropy_grad %l, %y, %dl : (tensor<2x16xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x8xf32>
  return
}
