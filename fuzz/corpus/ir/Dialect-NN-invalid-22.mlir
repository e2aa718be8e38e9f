func.func @add_types(%a: tensor<2x8xf32>, %b: tensor<1x8xf32>) {
  %y = nn.add %a, %b : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return
}
