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
