// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics

// The typed attributes check their fields when they are built (parsed or
// created); the dialect checks which attribute each name carries.

//===----------------------------------------------------------------------===//
// #nn.cost
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{#nn.cost expects bwd_flops to be non-negative, got -1}}
  %y = nn.gelu %x {nn.cost = #nn.cost<fwd_flops = 1, bwd_flops = -1, param_bytes = 0, act_bytes = 0>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // Every field is required, and a missing one is named.
  // expected-error @+1 {{#nn.cost is missing the field 'act_bytes'}}
  %y = nn.gelu %x {nn.cost = #nn.cost<fwd_flops = 1, bwd_flops = 2, param_bytes = 0>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.cost' must be a #nn.cost, got {fwd_flops = 1 : i64}}}
  %y = nn.gelu %x {nn.cost = {fwd_flops = 1 : i64}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{#nn.cost gives 'fwd_flops' twice}}
  %y = nn.gelu %x {nn.cost = #nn.cost<fwd_flops = 1, fwd_flops = 2, bwd_flops = 2, param_bytes = 0, act_bytes = 0>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

//===----------------------------------------------------------------------===//
// #nn.model
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{#nn.model is missing the field 'hidden'}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 2>}

// -----

// expected-error @+1 {{#nn.model has no field 'layerz' (its fields: family, layers, hidden, heads, vocab, max_positions, seq_len, microbatch_size, norm_position)}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layerz = 2>}

// -----

// expected-error @+1 {{#nn.model expects norm_position pre or post, got 'middle'}}
func.func private @m() attributes {nn.model = #nn.model<family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2, norm_position = middle>}

// -----

// expected-error @+1 {{#nn.model: norm_position = post applies to the bert family only, got family "gpt"}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2, norm_position = post>}

// -----

// expected-error @+1 {{#nn.model: 'vocab' must be a positive integer, got 0}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 0, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// The importer's limits hold for IR written by hand (ModelLimits.h).
// expected-error @+1 {{#nn.model: the token embedding's bytes, 4 * vocab * hidden, exceeds 2^63-1 (9223372036854775807), with hidden = 4611686018427387904, vocab = 8}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4611686018427387904, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// expected-error @+1 {{#nn.model: the MLP activation's bytes, 4 * microbatch_size * seq_len * 4 * hidden, exceeds 2^63-1 (9223372036854775807), with hidden = 4, seq_len = 4, microbatch_size = 4611686018427387904}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 4611686018427387904>}

// -----

// expected-error @+1 {{#nn.model: 'layers' must be at most 100000, got 100001}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 100001, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// expected-error @+1 {{#nn.model: 'heads' (3) must divide 'hidden' (4)}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 3, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// expected-error @+1 {{#nn.model: 'seq_len' (8) must not exceed 'max_positions' (4)}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 8, microbatch_size = 2>}

// -----

// expected-error @+1 {{#nn.model expects family "gpt" or "bert" or "llama" (the models bitpipe builds), got "t5"}}
func.func private @m() attributes {nn.model = #nn.model<family = "t5", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// expected-error @+1 {{#nn.model expects a model family, got ""}}
func.func private @m() attributes {nn.model = #nn.model<family = "", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// Every field is required (the manifest and the cost summary read them),
// and a missing one is named.
// expected-error @+1 {{#nn.model is missing the field 'vocab'}}
func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, max_positions = 4, seq_len = 4, microbatch_size = 2>}

// -----

// expected-error @+1 {{'nn.model' must be a #nn.model, got {family = "gpt"}}}
func.func private @m() attributes {nn.model = {family = "gpt"}}

//===----------------------------------------------------------------------===//
// #nn.init
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{#nn.init<normal> needs a standard deviation: #nn.init<normal, std = ...>}}
func.func private @f(tensor<4xf32> {nn.param = "w", nn.init = #nn.init<normal>})

// -----

// expected-error @+1 {{#nn.init<normal> expects a positive finite std, got 0}}
func.func private @f(tensor<4xf32> {nn.param = "w", nn.init = #nn.init<normal, std = 0.0>})

// -----

// expected-error @+1 {{#nn.init<zeros> takes no std}}
func.func private @f(tensor<4xf32> {nn.param = "b", nn.init = #nn.init<zeros, std = 1.0>})

// -----

// expected-error @+2 {{expected ::bitpipe::nn::InitKind to be one of: normal, zeros, ones}}
// expected-error @+1 {{failed to parse NN_InitAttr parameter 'kind' which is to be a `::bitpipe::nn::InitKind`}}
func.func private @f(tensor<4xf32> {nn.param = "w", nn.init = #nn.init<uniform>})

// -----

// expected-error @+1 {{argument #0: 'nn.init' must be a #nn.init, got {kind = "zeros"}}}
func.func private @f(tensor<4xf32> {nn.param = "b", nn.init = {kind = "zeros"}})

//===----------------------------------------------------------------------===//
// The untyped ones: nn.layer, nn.param, nn.input, and unknown names
//===----------------------------------------------------------------------===//

// -----

func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.layer' must be a non-negative integer, got -1 : i64}}
  %y = nn.gelu %x {nn.layer = -1} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{argument #0: 'nn.param' must be a non-empty string (the parameter's name)}}
func.func private @f(tensor<4xf32> {nn.param = ""})

// -----

// expected-error @+1 {{argument #0: 'nn.input' must be "tokens", "labels" or "dropout_key", got "targets"}}
func.func private @f(tensor<2x4xi32> {nn.input = "targets"})

// -----

// expected-error @+1 {{argument #0: unknown nn argument attribute 'nn.weight'}}
func.func private @f(tensor<4xf32> {nn.weight = "w"})

// -----

// expected-error @+1 {{unknown nn attribute 'nn.stage'}}
func.func private @f() attributes {nn.stage = 0}
