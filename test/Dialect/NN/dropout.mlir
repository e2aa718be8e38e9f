// RUN: bitpipe-opt %s | bitpipe-opt | FileCheck %s
// RUN: bitpipe-opt %s --mlir-print-op-generic | bitpipe-opt | FileCheck %s

// Dropout on a hidden state and on the attention probabilities, with the
// micro-batch's key as a training input; and their backward ops, which
// draw the same masks from the same key and sites.

// CHECK-LABEL: func @dropout
// CHECK-SAME: %[[KEY:[^:]*]]: tensor<4xi32> {nn.input = "dropout_key"}
func.func @dropout(%x: tensor<2x4x8xf32>, %qkv: tensor<2x4x24xf32>,
                   %key: tensor<4xi32> {nn.input = "dropout_key"},
                   %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x24xf32>,
        tensor<2x4x8xf32>) {
  // CHECK: nn.dropout %{{.*}}, %[[KEY]] {dropout = #nn.dropout<1.000000e-01, site = 2>} : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  %y = nn.dropout %x, %key {dropout = #nn.dropout<0.1, site = 2>}
      : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  // CHECK: nn.attention %{{.*}} heads(2) causal dropout(%[[KEY]], #nn.dropout<5.000000e-01, site = 1>) : (tensor<2x4x24xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  %a = nn.attention %qkv heads(2) causal
      dropout(%key, #nn.dropout<0.5, site = 1>)
      : (tensor<2x4x24xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}} heads(2) causal dropout(%[[KEY]], #nn.dropout<5.000000e-01, site = 1>) : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x24xf32>
  %dqkv = nn.attention_grad %qkv, %dy heads(2) causal
      dropout(%key, #nn.dropout<0.5, site = 1>)
      : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x24xf32>
  // Without dropout, the attention ops print as before.
  // CHECK: nn.attention %{{.*}} heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %b = nn.attention %qkv heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return %y, %a, %dqkv, %b
      : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x24xf32>,
        tensor<2x4x8xf32>
}
