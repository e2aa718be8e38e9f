// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime="precision=bf16" | FileCheck %s --check-prefix=BF16

// Epilogue fusion (lib/Conversion/NNToRuntime/EpilogueFusion.cpp): a linear
// feeding a GELU is one call, which writes both the linear's result (pre)
// and the GELU's; pre keeps its other users (here: it is returned).
// CHECK-DAG:  func.func private @bp_linear_gelu_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
// CHECK-DAG:  func.func private @bp_linear_bwd_input_gelu(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
// CHECK-LABEL: func.func @mlp(
// CHECK:      %[[PRE:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK:      %[[Y:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK:      memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK:      %[[YP:.*]] = llvm.inttoptr
// CHECK:      memref.extract_aligned_pointer_as_index %[[PRE]]
// CHECK:      %[[PP:.*]] = llvm.inttoptr
// CHECK:      %[[N:.*]] = arith.constant 8 : i64
// CHECK:      %[[IN:.*]] = arith.constant 8 : i64
// CHECK:      %[[OUT:.*]] = arith.constant 32 : i64
// CHECK:      call @bp_linear_gelu_fwd(%{{.*}}, %{{.*}}, %{{.*}}, %[[YP]], %[[PP]], %[[N]], %[[IN]], %[[OUT]])
// CHECK-NOT:  call @bp_gelu_fwd
// CHECK:      call @bp_linear_fwd(
// CHECK:      memref.dealloc %[[Y]]
// CHECK:      return %{{.*}}, %[[PRE]] :
// BF16-LABEL: func.func @mlp(
// BF16:       memref.alloc() : memref<2x4x32xbf16>
// BF16:       memref.alloc() : memref<2x4x32xbf16>
// BF16:       call @bp_linear_gelu_fwd_bf16(
func.func @mlp(%x: tensor<2x4x8xf32>, %w1: tensor<32x8xf32>, %b1: tensor<32xf32>, %w2: tensor<8x32xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x32xf32>) {
  %pre = nn.linear %x, %w1, %b1 : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %y = nn.gelu %pre : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %o = nn.linear %y, %w2 : (tensor<2x4x32xf32>, tensor<8x32xf32>) -> tensor<2x4x8xf32>
  return %o, %pre : tensor<2x4x8xf32>, tensor<2x4x32xf32>
}

// A GELU of anything but a linear is the GELU kernel.
// CHECK-LABEL: func.func @gelu_of_attention(
// CHECK:      call @bp_attention_fwd(
// CHECK:      call @bp_gelu_fwd(
// CHECK-NOT:  call @bp_linear_gelu_fwd
func.func @gelu_of_attention(%qkv: tensor<2x4x24xf32>) -> tensor<2x4x8xf32> {
  %a = nn.attention %qkv heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %y = nn.gelu %a : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// The exact GELU is a kernel of its own, forward and backward: the fused
// kernels (and cuBLASLt's epilogues) compute the tanh form.
// CHECK-LABEL: func.func @mlp_erf(
// CHECK:      call @bp_linear_fwd(
// CHECK:      call @bp_gelu_erf_fwd(
// CHECK-NOT:  call @bp_linear_gelu_fwd
// CHECK:      call @bp_linear_bwd_input(
// CHECK:      call @bp_gelu_erf_bwd(
// CHECK-NOT:  call @bp_linear_bwd_input_gelu
// CHECK:      return
func.func @mlp_erf(%x: tensor<2x4x8xf32>, %w1: tensor<32x8xf32>, %w2: tensor<8x32xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>) {
  %pre = nn.linear %x, %w1 : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %y = nn.gelu %pre form(erf) : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %g = nn.linear_input_grad %dy, %w2 : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %dpre = nn.gelu_grad %pre, %g form(erf) : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return %y, %dpre : tensor<2x4x32xf32>, tensor<2x4x32xf32>
}

// The backward: the gradient of the linear's input, used only by the GELU's
// backward, is never materialised; dx = (dy W) * gelu'(pre).
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-SAME: %[[PRE:[a-z0-9]+]]: memref<2x4x32xf32>
// CHECK:      %[[DX:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK:      memref.extract_aligned_pointer_as_index %[[PRE]]
// CHECK:      %[[PP:.*]] = llvm.inttoptr
// CHECK:      memref.extract_aligned_pointer_as_index %[[DX]]
// CHECK:      %[[DP:.*]] = llvm.inttoptr
// CHECK:      %[[N:.*]] = arith.constant 8 : i64
// CHECK:      %[[IN:.*]] = arith.constant 32 : i64
// CHECK:      %[[OUT:.*]] = arith.constant 8 : i64
// CHECK:      call @bp_linear_bwd_input_gelu(%{{.*}}, %{{.*}}, %[[PP]], %[[DP]], %[[N]], %[[IN]], %[[OUT]])
// CHECK-NOT:  call @bp_gelu_bwd
// CHECK-NOT:  call @bp_linear_bwd_input(
// CHECK:      return %[[DX]] :
// BF16-LABEL: func.func @mlp_bwd(
// BF16:       memref.alloc() : memref<2x4x32xbf16>
// BF16:       call @bp_linear_bwd_input_gelu_bf16(
func.func @mlp_bwd(%pre: tensor<2x4x32xf32>, %w2: tensor<8x32xf32>, %dy: tensor<2x4x8xf32>) -> tensor<2x4x32xf32> {
  %g = nn.linear_input_grad %dy, %w2 : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %dpre = nn.gelu_grad %pre, %g : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return %dpre : tensor<2x4x32xf32>
}

// A gradient with another user must exist: no fusion.
// CHECK-LABEL: func.func @shared_grad(
// CHECK:      call @bp_linear_bwd_input(
// CHECK:      call @bp_gelu_bwd(
// CHECK-NOT:  call @bp_linear_bwd_input_gelu
func.func @shared_grad(%pre: tensor<2x4x32xf32>, %w2: tensor<8x32xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>) {
  %g = nn.linear_input_grad %dy, %w2 : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %dpre = nn.gelu_grad %pre, %g : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return %dpre, %g : tensor<2x4x32xf32>, tensor<2x4x32xf32>
}
