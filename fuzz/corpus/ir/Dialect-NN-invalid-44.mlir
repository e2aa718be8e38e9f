func.func @swiglu_grad(%a: tensor<2x8xf32>, %d: tensor<2x4xf32>) {
  %x, %y = nn.swiglu_grad %a, %a, %d : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}
