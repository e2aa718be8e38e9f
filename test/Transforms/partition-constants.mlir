// RUN: bitpipe-opt %s --bitpipe-partition=chunks=2 | FileCheck %s

// A constant has no layer: rather than pass it from stage to stage, each
// stage that uses it gets its own copy, and the model keeps none.

// CHECK-LABEL: func.func @consts_stage0(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<2x8xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[X]], %[[HALF]] {nn.layer = 0 : i64}
// CHECK-NEXT:    return %[[A]]

// CHECK-LABEL: func.func @consts_stage1(
// CHECK-SAME:    %[[A:[^:]+]]: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<2x8xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.add %[[A]], %[[HALF]] {nn.layer = 1 : i64}
// CHECK-NEXT:    return %[[B]]

// CHECK-LABEL: func.func @consts(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[A:.*]] = call @consts_stage0(%[[X]])
// CHECK-NEXT:    %[[B:.*]] = call @consts_stage1(%[[A]])
// CHECK-NEXT:    return %[[B]]
func.func @consts(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  %half = arith.constant dense<5.000000e-01> : tensor<2x8xf32>
  %a = nn.add %x, %half {nn.layer = 0} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = nn.add %a, %half {nn.layer = 1} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %b : tensor<2x8xf32>
}
