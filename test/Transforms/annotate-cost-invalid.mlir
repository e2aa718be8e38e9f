// RUN: bitpipe-opt %s --split-input-file --verify-diagnostics --bitpipe-annotate-cost -o /dev/null

func.func @no_layer(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.gelu' op has no 'nn.layer' attribute: cost analysis groups ops by layer (bitpipe-import sets it)}}
  %y = nn.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'nn.gelu' op needs static shapes for cost analysis, got 'tensor<?x8xf32>'}}
  %y = nn.gelu %x {nn.layer = 1} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tensors that fit, but whose FLOPs do not: 4 * B*T*H * T = 2^84. The
// counts saturate instead of wrapping (to 0, or negative), and the model is
// refused.
// expected-error @+1 {{'func.func' op has more forward FLOPs per micro-batch than 2^63-1 (9223372036854775807); docs/models.md, "Limits", gives the sizes bitpipe builds}}
func.func @flops_overflow(%qkv: tensor<1x2147483648x3145728xf32>) -> tensor<1x2147483648x1048576xf32> {
  %a = nn.attention %qkv heads(1) causal {nn.layer = 1} : (tensor<1x2147483648x3145728xf32>) -> tensor<1x2147483648x1048576xf32>
  return %a : tensor<1x2147483648x1048576xf32>
}
