// RUN: bitpipe-opt %s --split-input-file --verify-diagnostics --bitpipe-partition=chunks=2 -o /dev/null

// Models bitpipe-partition cannot cut, whatever the options. The option
// errors are in partition-invalid-options.mlir.

// expected-error @+1 {{bitpipe-partition found no model function: expected a func.func with 'nn.model', or a single func.func holding nn ops}}
module {
  func.func @plain(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    return %x : tensor<2x8xf32>
  }
}

// -----

func.func @a(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  %y = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
// expected-error @+1 {{bitpipe-partition expects one model function, but @a and @b both have 'nn.model'}}
func.func @b(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  %y = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @a(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
// expected-error @+1 {{bitpipe-partition expects one model function, but @a and @b both hold nn ops and neither has 'nn.model'}}
func.func @b(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{bitpipe-partition expects the model function @external to have a body of one block}}
func.func private @external(tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>}

// -----

// expected-error @+1 {{bitpipe-partition found no nn ops with 'nn.layer' in @empty: nothing to partition}}
func.func @empty(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  return %x : tensor<2x8xf32>
}

// -----

func.func @no_layer(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.gelu' op has no 'nn.layer' attribute: cost analysis groups ops by layer (bitpipe-import sets it)}}
  %y = nn.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{bitpipe-partition expects the 'nn.layer' values of @gap to be 0..2 without gaps, but no op has layer 1}}
func.func @gap(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %a = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = nn.gelu %a {nn.layer = 2} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %b : tensor<2x8xf32>
}

// -----

// Constants without a layer are copied into the chunks that use them; any
// other op needs a layer.
func.func @unlayered(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'tensor.empty' op has no 'nn.layer' attribute: bitpipe-partition puts every op of the model in the chunk of its layer}}
  %e = tensor.empty() : tensor<2x8xf32>
  %a = nn.add %x, %e {nn.layer = 0} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = nn.gelu %a {nn.layer = 1} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %b : tensor<2x8xf32>
}

// -----

// Layer 1 is computed before layer 0 and feeds it: chunk 1 would have to run
// before chunk 0.
func.func @backwards(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %a = nn.gelu %x {nn.layer = 1} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-error @+1 {{'nn.gelu' op in layer 0 (chunk 0) uses a value of layer 1 (chunk 1): values may only flow from a chunk to later ones}}
  %b = nn.gelu %a {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %b : tensor<2x8xf32>
}

// -----

// Partitioning twice would shadow the first stages.
func.func @twice_stage0(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}
// expected-error @+1 {{bitpipe-partition cannot outline chunk 0 as @twice_stage0: the module already has that symbol (was it partitioned already?)}}
func.func @twice(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  %a = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = nn.gelu %a {nn.layer = 1} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %b : tensor<2x8xf32>
}
