// RUN: bitpipe-opt %s | bitpipe-opt | FileCheck %s
// RUN: bitpipe-opt %s --mlir-print-op-generic | bitpipe-opt | FileCheck %s

// The nn attributes round trip: fields in any order in, in declaration
// order out; a std reads back bit for bit.

// CHECK-LABEL: func.func @model(
// CHECK-SAME: {nn.init = #nn.init<normal, std = 2.000000e-02>, nn.param = "wte"}
// CHECK-SAME: {nn.init = #nn.init<normal, std = 0.0070710678118654745>, nn.param = "proj"}
// CHECK-SAME: {nn.init = #nn.init<ones>, nn.param = "ln.weight"}
// CHECK-SAME: {nn.init = #nn.init<zeros>, nn.param = "ln.bias"}
// CHECK-SAME: nn.model = #nn.model<family = "gpt", layers = 2, hidden = 8, heads = 2, vocab = 16, max_positions = 4, seq_len = 4, microbatch_size = 2>
func.func @model(%wte: tensor<16x8xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 0.02>},
                 %proj: tensor<8x8xf32> {nn.param = "proj", nn.init = #nn.init<normal, std = 0.0070710678118654745>},
                 %g: tensor<8xf32> {nn.param = "ln.weight", nn.init = #nn.init<ones>},
                 %b: tensor<8xf32> {nn.param = "ln.bias", nn.init = #nn.init<zeros>},
                 %x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    attributes {nn.model = #nn.model<microbatch_size = 2, seq_len = 4, family = "gpt", vocab = 16,
                                     layers = 2, hidden = 8, heads = 2, max_positions = 4>} {
  // CHECK: nn.gelu {{.*}}nn.cost = #nn.cost<fwd_flops = 512, bwd_flops = 1024, param_bytes = 0, act_bytes = 256>, nn.layer = 1 : i64
  %y = nn.gelu %x {nn.layer = 1, nn.cost = #nn.cost<act_bytes = 256, param_bytes = 0, bwd_flops = 1024, fwd_flops = 512>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// A post-LN BERT says so; pre, the default, is not printed.
// CHECK-LABEL: func.func private @post
// CHECK-SAME: nn.model = #nn.model<family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2, norm_position = post>
func.func private @post() attributes {nn.model = #nn.model<norm_position = post, family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
// CHECK-LABEL: func.func private @pre
// CHECK-SAME: microbatch_size = 2>}
func.func private @pre() attributes {nn.model = #nn.model<family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2, norm_position = pre>}
