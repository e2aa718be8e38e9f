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
