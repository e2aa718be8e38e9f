// RUN: bitpipe-opt %s --split-input-file --verify-diagnostics --bitpipe-lower-nn-to-runtime

// The kernels take sizes as constants.
func.func @dynamic(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'nn.linear' op operand #0 has dynamic shape 'tensor<?x8xf32>'; bitpipe-lower-nn-to-runtime needs static shapes}}
  %y = nn.linear %x, %w : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// The CPU runtime has fp32 kernels only.
func.func @bf16(%x: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
  // expected-error @+1 {{'nn.gelu' op operand #0 has element type 'bf16'; the runtime has fp32 kernels with i32 token ids and labels}}
  %y = nn.gelu %x : (tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
  return %y : tensor<2x4x8xbf16>
}

// -----

// Token ids are int32_t in the ABI.
func.func @i64_tokens(%t: tensor<2x4xi64>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'nn.embedding' op operand #0 has element type 'i64'}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi64>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return %x : tensor<2x4x8xf32>
}

// -----

// Only splat constants have a buffer lowering.
func.func @dense_constant() -> tensor<2xf32> {
  // expected-error @+1 {{'arith.constant' op only splat f32 tensor constants can be lowered to runtime buffers}}
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// A parameter's gradient accumulates in place only through the kernels that
// make it: not a value that is also used elsewhere.
// expected-error @+1 {{returns the gradient of parameter "w" (result #0) through nn.linear_weight_grad result #0, which cannot accumulate in place; expected the parameter gradient of a gradient op (nn.linear_weight_grad, nn.embedding_grad, nn.layer_norm_grad, nn.rms_norm_grad) or an nn.add of such, each used only there}}
func.func @shared_gradient(%x: tensor<2x4x8xf32>, %dl: tensor<2x4x16xf32>) -> (tensor<16x8xf32> {nn.param = "w"}, tensor<16x8xf32>) {
  %dw = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
  return %dw, %dw : tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// Nor an argument passed through.
// expected-error @+1 {{returns the gradient of parameter "w" (result #0) through argument #0, which cannot accumulate in place}}
func.func @passed_through(%g: tensor<16x8xf32>) -> (tensor<16x8xf32> {nn.param = "w"}) {
  return %g : tensor<16x8xf32>
}

// -----

// The runtime passes the accumulators; a call could not.
func.func @accumulating(%x: tensor<2x4x8xf32>, %dl: tensor<2x4x16xf32>) -> (tensor<16x8xf32> {nn.param = "w"}) {
  %dw = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}
func.func @caller(%x: tensor<2x4x8xf32>, %dl: tensor<2x4x16xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'func.call' op calls "accumulating", whose parameter gradients (nn.param results) accumulate in place: such a function is called by the runtime only, which passes the accumulators}}
  %dw = call @accumulating(%x, %dl) : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}

// -----

// One kernel call takes one accumulator type: a gradient returned to the
// float64 accumulator and its sibling kept as a value cannot share it.
func.func @mixed(%x: tensor<2x4x8xf32>, %dl: tensor<2x4x16xf32>) -> (tensor<16x8xf32> {nn.param = "w"}, tensor<16xf32>) {
  // expected-error @+1 {{'nn.linear_weight_grad' op accumulates its parameter gradients into 'f64' and 'f32'; expected every one of them returned as a parameter gradient (nn.param) or none}}
  %dw, %db = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>)
  return %dw, %db : tensor<16x8xf32>, tensor<16xf32>
}
