func.func private @m() attributes {nn.model = {family = "gpt"}}
