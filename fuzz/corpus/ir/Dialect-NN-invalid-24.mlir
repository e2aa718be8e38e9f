func.func @cross_entropy_labels(%l: tensor<2x4x16xf32>, %y: tensor<2x5xi32>) {
  %loss = nn.cross_entropy %l, %y : (tensor<2x4x16xf32>, tensor<2x5xi32>) -> tensor<f32>
  return
}
