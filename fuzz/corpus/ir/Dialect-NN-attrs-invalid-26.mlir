func.func private @f(tensor<4xf32> {nn.weight = "w"})
