// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime --bitpipe-lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// The LLaMA ops' kernels (runtime.h), declared with the ABI's C types.
// CHECK-DAG: func.func private @bp_rms_norm_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, f32) -> i32
// CHECK-DAG: func.func private @bp_rms_norm_bwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// CHECK-DAG: func.func private @bp_rotary_fwd(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, f32) -> i32
// CHECK-DAG: func.func private @bp_rotary_bwd(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, f32) -> i32
// CHECK-DAG: func.func private @bp_attention_gqa_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i32) -> i32
// CHECK-DAG: func.func private @bp_attention_gqa_bwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i32) -> i32
// CHECK-DAG: func.func private @bp_swiglu_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK-DAG: func.func private @bp_swiglu_bwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> i32
// LLVMIR-DAG: declare i32 @bp_rotary_fwd(ptr, ptr, i64, i64, i64, i64, i64, float)
// LLVMIR-DAG: declare i32 @bp_attention_gqa_bwd(ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64, i64, i32)

// Forward: the embedding without a position table passes NULL for it;
// rms_norm's rstd is scratch; rotary gets B, T, H = heads * d, heads,
// kv_heads and the base; grouped-query attention its kv_heads; swiglu the
// element count.
// CHECK-LABEL: func.func @llama_forward(
// CHECK:      %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      call @bp_embedding_fwd(%{{.*}}, %{{.*}}, %[[NULL]],
// CHECK:      %[[RSTD:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
// CHECK:      call @bp_rms_norm_fwd({{.*}}, %[[EPS]])
// CHECK:      call @bp_check
// CHECK-NEXT: memref.dealloc %[[RSTD]]
// CHECK:      %[[ROT:.*]] = memref.alloc() : memref<2x4x16xf32>
// CHECK-DAG:  %[[B:.*]] = arith.constant 2 : i64
// CHECK-DAG:  %[[T:.*]] = arith.constant 4 : i64
// CHECK-DAG:  %[[H:.*]] = arith.constant 8 : i64
// CHECK-DAG:  %[[NH:.*]] = arith.constant 2 : i64
// CHECK-DAG:  %[[NKV:.*]] = arith.constant 1 : i64
// CHECK-DAG:  %[[BASE:.*]] = arith.constant 5.000000e+05 : f32
// CHECK:      call @bp_rotary_fwd(%{{.*}}, %{{.*}}, %[[B]], %[[T]], %[[H]], %[[NH]], %[[NKV]], %[[BASE]])
// CHECK:      %[[LSE:.*]] = memref.alloc() : memref<2x2x4xf32>
// CHECK:      call @bp_attention_gqa_fwd(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:      %[[N:.*]] = arith.constant 96 : i64
// CHECK:      call @bp_swiglu_fwd(%{{.*}}, %{{.*}}, %{{.*}}, %[[N]])
func.func @llama_forward(%tok: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %g: tensor<8xf32>, %qkv: tensor<2x4x16xf32>, %gate: tensor<2x4x12xf32>, %up: tensor<2x4x12xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x12xf32>) {
  %x = nn.embedding %tok, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %n = nn.rms_norm %x, %g {epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = nn.rotary %qkv heads(2) kv_heads(1) {base = 500000.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %a = nn.attention %r heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  %s = nn.swiglu %gate, %up : (tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  return %x, %n, %a, %s : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x12xf32>
}

// kv_heads equal to heads is plain multi-head attention: the multi-head
// kernels (which every target has).
// CHECK-LABEL: func.func @full_groups(
// CHECK:      call @bp_attention_fwd(
// CHECK-NOT:  bp_attention_gqa
// CHECK:      return
func.func @full_groups(%qkv: tensor<2x4x24xf32>) -> tensor<2x4x8xf32> {
  %a = nn.attention %qkv heads(2) kv_heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}

// Backward: the token table's gradient is zeroed and accumulated, with NULL
// for the missing position table; rms_norm_grad recomputes rstd with the
// forward kernel, then accumulates dgamma into a zeroed buffer; the
// attention backward recomputes its forward; rotary's backward needs only
// the gradient; swiglu's writes both gradients.
// CHECK-LABEL: func.func @llama_backward(
// CHECK:      %[[DWTE:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK:      call @bp_fill(
// CHECK:      %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      call @bp_embedding_bwd(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]],
// CHECK:      %[[DX:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      %[[DG:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_fill(
// CHECK:      %[[RSTD:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_rms_norm_fwd(
// CHECK:      call @bp_rms_norm_bwd(
// CHECK:      call @bp_attention_gqa_fwd(
// CHECK:      call @bp_attention_gqa_bwd(
// CHECK:      call @bp_rotary_bwd(
// CHECK:      call @bp_swiglu_bwd(
func.func @llama_backward(%tok: tensor<2x4xi32>, %x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>, %g: tensor<8xf32>, %qkv: tensor<2x4x16xf32>, %h: tensor<2x4x12xf32>) -> (tensor<16x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x16xf32>, tensor<2x4x12xf32>, tensor<2x4x12xf32>) {
  %dwte = nn.embedding_grad %tok, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %dx, %dg = nn.rms_norm_grad %x, %g, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %dqkv = nn.attention_grad %qkv, %dy heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  %drot = nn.rotary_grad %dqkv heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %dgate, %dup = nn.swiglu_grad %h, %h, %h : (tensor<2x4x12xf32>, tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> (tensor<2x4x12xf32>, tensor<2x4x12xf32>)
  return %dwte, %dx, %dg, %drot, %dgate, %dup : tensor<16x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x16xf32>, tensor<2x4x12xf32>, tensor<2x4x12xf32>
}
