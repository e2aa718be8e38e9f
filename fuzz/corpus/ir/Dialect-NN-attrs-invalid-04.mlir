func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 2>}
