func.func @swiglu_types(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  %y = nn.swiglu %a, %b : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}
