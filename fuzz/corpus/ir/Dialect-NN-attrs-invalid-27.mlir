func.func private @f() attributes {nn.stage = 0}
