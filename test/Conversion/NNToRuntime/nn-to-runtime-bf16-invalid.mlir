// RUN: bitpipe-opt %s --split-input-file --verify-diagnostics --bitpipe-lower-nn-to-runtime="precision=bf16"

// bp_fill writes f32: a splat constant that bf16 would store as bf16 has
// no lowering (the loss seed is a scalar, which stays f32).
func.func @bf16_constant() -> tensor<2xf32> {
  // expected-error @+1 {{'arith.constant' op is a 'tensor<2xf32>' constant, which precision=bf16 would store as bf16; only scalar f32 constants (the loss seed) can be lowered, as bp_fill writes f32}}
  %c = arith.constant dense<1.0> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// One add kernel, one element type: a parameter gradient (f32) plus an
// activation gradient (bf16) is not something the lowering can add.
func.func @mixed_add(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %dw = nn.linear_weight_grad %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // expected-error @+1 {{'nn.add' op adds a 'f32' and a 'bf16' value under precision=bf16; expected two parameter gradients (f32) or two activations or their gradients (bf16)}}
  %s = nn.add %dw, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// A sum of parameter gradients under bf16 is an in-place accumulation: a
// gradient with another user cannot be accumulated into.
func.func @shared_gradient(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %d1 = nn.linear_weight_grad %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %d2 = nn.linear_weight_grad %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // expected-error @+1 {{'nn.add' op sums two parameter gradients that precision=bf16 cannot add in place; expected one of them to be the result of a gradient op that runs after the other, each used only here}}
  %s = nn.add %d1, %d2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s, %d1 : tensor<8x8xf32>, tensor<8x8xf32>
}
