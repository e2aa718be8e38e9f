// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime=precision=bf16 | FileCheck %s --check-prefix=BF16

// The dropout kernels (runtime.h): the key is the micro-batch's four i32
// words, then the site and the probability.
// CHECK-DAG: func.func private @bp_dropout(!llvm.ptr, !llvm.ptr, !llvm.ptr, i32, f32, i64) -> i32
// CHECK-DAG: func.func private @bp_attention_dropout_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i32, !llvm.ptr, i32, f32) -> i32
// CHECK-DAG: func.func private @bp_attention_dropout_bwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i32, !llvm.ptr, i32, f32) -> i32
// BF16-DAG: func.func private @bp_dropout_bf16(
// BF16-DAG: func.func private @bp_attention_dropout_fwd_bf16(
// BF16-DAG: func.func private @bp_attention_dropout_bwd_bf16(

// nn.dropout: one call with the key's address, the site and p, and the
// element count; its gradient (an nn.dropout of the gradient) the same.
// CHECK-LABEL: func.func @hidden(
// CHECK-SAME: %[[X:.*]]: memref<2x4x8xf32>, %[[KEY:.*]]: memref<4xi32>
// CHECK:      %[[Y:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      memref.extract_aligned_pointer_as_index %[[KEY]]
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[KEYPTR:.*]] = llvm.inttoptr
// CHECK-DAG:  %[[SITE:.*]] = arith.constant 2 : i32
// CHECK-DAG:  %[[P:.*]] = arith.constant 1.000000e-01 : f32
// CHECK-DAG:  %[[N:.*]] = arith.constant 64 : i64
// CHECK:      call @bp_dropout(%{{.*}}, %{{.*}}, %[[KEYPTR]], %[[SITE]], %[[P]], %[[N]])
// BF16-LABEL: func.func @hidden(
// BF16-SAME: memref<2x4x8xbf16>, %{{.*}}: memref<4xi32>
// BF16:      call @bp_dropout_bf16(
func.func @hidden(%x: tensor<2x4x8xf32>, %key: tensor<4xi32> {nn.input = "dropout_key"}) -> tensor<2x4x8xf32> {
  %y = nn.dropout %x, %key {dropout = #nn.dropout<0.1, site = 2>}
      : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Attention with dropout calls the dropping kernels with attention's
// arguments and then the key, site and p; its backward runs the forward
// again with the same mask (the correction term reads that output), then
// the backward.
// CHECK-LABEL: func.func @attention(
// CHECK:      call @bp_attention_dropout_fwd(
// CHECK-NOT:  call @bp_attention_fwd(
// CHECK-LABEL: func.func @attention_grad(
// CHECK:      %[[S1:.*]] = arith.constant 1 : i32
// CHECK:      call @bp_attention_dropout_fwd({{.*}}, %[[S1]], %{{.*}})
// CHECK:      call @bp_attention_dropout_bwd({{.*}}, %[[S1]], %{{.*}})
func.func @attention(%qkv: tensor<2x4x24xf32>, %key: tensor<4xi32> {nn.input = "dropout_key"}) -> tensor<2x4x8xf32> {
  %a = nn.attention %qkv heads(2) causal dropout(%key, #nn.dropout<0.1, site = 1>)
      : (tensor<2x4x24xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}
func.func @attention_grad(%qkv: tensor<2x4x24xf32>, %dy: tensor<2x4x8xf32>, %key: tensor<4xi32>) -> tensor<2x4x24xf32> {
  %d = nn.attention_grad %qkv, %dy heads(2) causal dropout(%key, #nn.dropout<0.1, site = 1>)
      : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x24xf32>
  return %d : tensor<2x4x24xf32>
}
