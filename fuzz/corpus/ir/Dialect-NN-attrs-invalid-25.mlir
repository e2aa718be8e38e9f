func.func private @f(tensor<2x4xi32> {nn.input = "targets"})
