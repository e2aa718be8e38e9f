func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layerz = 2>}
