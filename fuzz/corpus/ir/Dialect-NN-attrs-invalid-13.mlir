func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 8, microbatch_size = 2>}
