func.func @cross_entropy_rank(%l: tensor<16xf32>, %y: tensor<i32>) {
  %loss = nn.cross_entropy %l, %y : (tensor<16xf32>, tensor<i32>) -> tensor<f32>
  return
}
