func.func @bytes_overflow(%x: tensor<2147483648x2147483648xf32>, %w: tensor<2147483648x2147483648xf32>) {
  %y = nn.add %x, %w : (tensor<2147483648x2147483648xf32>, tensor<2147483648x2147483648xf32>) -> tensor<2147483648x2147483648xf32>
  return
}
