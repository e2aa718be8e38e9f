func.func private @f(tensor<4xf32> {nn.param = "b", nn.init = #nn.init<zeros, std = 1.0>})
