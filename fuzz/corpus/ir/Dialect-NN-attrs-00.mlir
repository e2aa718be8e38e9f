func.func @model(%wte: tensor<16x8xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 0.02>},
                 %proj: tensor<8x8xf32> {nn.param = "proj", nn.init = #nn.init<normal, std = 0.0070710678118654745>},
                 %g: tensor<8xf32> {nn.param = "ln.weight", nn.init = #nn.init<ones>},
                 %b: tensor<8xf32> {nn.param = "ln.bias", nn.init = #nn.init<zeros>},
                 %x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    attributes {nn.model = #nn.model<microbatch_size = 2, seq_len = 4, family = "gpt", vocab = 16,
                                     layers = 2, hidden = 8, heads = 2, max_positions = 4>} {
  %y = nn.gelu %x {nn.layer = 1, nn.cost = #nn.cost<act_bytes = 256, param_bytes = 0, bwd_flops = 1024, fwd_flops = 512>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

func.func private @post() attributes {nn.model = #nn.model<norm_position = post, family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
func.func private @pre() attributes {nn.model = #nn.model<family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2, norm_position = pre>}
