func.func private @f(tensor<4xf32> {nn.param = "w", nn.init = #nn.init<normal>})
