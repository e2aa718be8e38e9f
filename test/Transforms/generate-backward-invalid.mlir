// RUN: bitpipe-opt %s --split-input-file --verify-diagnostics --bitpipe-generate-backward

// expected-error @+1 {{no stage functions (functions with 'bitpipe.stage'): run bitpipe-partition first}}
module {
  func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %y = nn.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

func.func @s(%x: tensor<2xf32>) -> tensor<2xf32> attributes {bitpipe.stage = 0 : i64} {
  // expected-error @+1 {{'arith.addf' op has no backward rule (nn::BackwardOpInterface): cannot differentiate stage @s}}
  %y = arith.addf %x, %x : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{'func.func' op already has a backward}}
func.func @s(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s_bwd} {
  %y = nn.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
