// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime="precision=bf16" | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime="precision=bf16" --bitpipe-lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | FileCheck %s --check-prefix=FP32

// Mixed precision (bitpipe/Conversion/Target/StorageType.h): weights,
// activations and their gradients become bf16 buffers; the loss (rank 0),
// the kernels' statistics and i32 ids stay as they were.
// CHECK-LABEL: func.func @fwd(
// CHECK-SAME: memref<2x4xi32>, %{{[a-z0-9]+}}: memref<16x8xbf16>, %{{[a-z0-9]+}}: memref<4x8xbf16>, %{{[a-z0-9]+}}: memref<8xbf16>, %{{[a-z0-9]+}}: memref<8xbf16>, %{{[a-z0-9]+}}: memref<16x8xbf16>, %{{[a-z0-9]+}}: memref<2x4xi32>) -> (memref<f32>, memref<2x4x8xbf16>)
// CHECK:      memref.alloc() : memref<2x4x8xbf16>
// CHECK:      call @bp_embedding_fwd_bf16(
// CHECK:      memref.alloc() : memref<2x4x8xbf16>
// CHECK:      memref.alloc() : memref<8xf32>
// CHECK:      memref.alloc() : memref<8xf32>
// CHECK:      call @bp_layer_norm_fwd_bf16(
// CHECK:      memref.alloc() : memref<2x4x16xbf16>
// CHECK:      call @bp_linear_fwd_bf16(
// CHECK:      memref.alloc() : memref<f32>
// CHECK:      call @bp_cross_entropy_fwd_bf16(
// The bf16 twins of the kernels (runtime.h: bp_<kernel>_bf16), with the
// same machine types: the ABI's pointers are addresses.
// LLVMIR-DAG: declare i32 @bp_linear_fwd_bf16(ptr, ptr, ptr, ptr, i64, i64, i64)
// LLVMIR-DAG: declare i32 @bp_layer_norm_fwd_bf16(ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, float)
// FP32-LABEL: func.func @fwd(
// FP32-SAME:  memref<16x8xf32>
// FP32-NOT:   bf16
func.func @fwd(%tok: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %w: tensor<16x8xf32>, %lab: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x8xf32>) {
  %x = nn.embedding %tok, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %h = nn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %logits = nn.linear %h, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %lab : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss, %h : tensor<f32>, tensor<2x4x8xf32>
}

// The parameter gradients are f32 accumulators, zeroed with bp_fill (which
// only ever fills f32). A tied weight's two gradients are summed in f32 by
// accumulation: the embedding's kernel adds into the head's dW buffer (no
// zeroing, no add: bp_add_fwd reads bf16 under bf16). The activation
// gradients are bf16, the attention and layer-norm statistics f32 scratch,
// the recomputed attention output bf16. The loss seed stays an f32 scalar,
// passed by address.
// CHECK-LABEL: func.func @bwd(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<2x4xi32>, %{{[a-z0-9]+}}: memref<2x4x8xbf16>, %{{[a-z0-9]+}}: memref<8xbf16>, %{{[a-z0-9]+}}: memref<16x8xbf16>, %{{[a-z0-9]+}}: memref<2x4x24xbf16>, %{{[a-z0-9]+}}: memref<2x4x16xbf16>, %{{[a-z0-9]+}}: memref<2x4xi32>)
// CHECK-SAME: -> (memref<16x8xf32>, memref<4x8xf32>, memref<8xf32>, memref<8xf32>, memref<16xf32>, memref<2x4x24xbf16>)
// CHECK:      %[[SEED:.*]] = memref.alloc() : memref<f32>
// CHECK:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:      call @bp_fill(%{{.*}}, %[[ONE]], %{{.*}})
// CHECK:      memref.alloc() : memref<2x4x16xbf16>
// CHECK:      memref.extract_aligned_pointer_as_index %[[SEED]]
// CHECK:      call @bp_cross_entropy_bwd_bf16(
// CHECK:      memref.alloc() : memref<2x4x8xbf16>
// CHECK:      call @bp_linear_bwd_input_bf16(
// CHECK:      %[[DW:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK:      call @bp_fill(
// CHECK:      %[[DB:.*]] = memref.alloc() : memref<16xf32>
// CHECK:      call @bp_fill(
// CHECK:      call @bp_linear_bwd_weight_bf16(
// CHECK:      memref.alloc() : memref<2x4x24xbf16>
// CHECK:      memref.alloc() : memref<2x4x8xbf16>
// CHECK:      memref.alloc() : memref<2x2x4xf32>
// CHECK:      call @bp_attention_fwd_bf16(
// CHECK:      call @bp_attention_bwd_bf16(
// CHECK:      memref.alloc() : memref<2x4x8xbf16>
// CHECK:      memref.alloc() : memref<8xf32>
// CHECK:      call @bp_fill(
// CHECK:      memref.alloc() : memref<8xf32>
// CHECK:      call @bp_fill(
// CHECK:      call @bp_layer_norm_bwd_bf16(
// CHECK:      memref.alloc() : memref<2x4x8xbf16>
// CHECK:      call @bp_add_fwd_bf16(
// CHECK:      %[[DWPE:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK:      call @bp_fill(
// CHECK-NOT:  memref.alloc
// CHECK:      memref.extract_aligned_pointer_as_index %[[DW]]
// CHECK:      call @bp_embedding_bwd_bf16(
// CHECK-NOT:  call @bp_add_fwd
// CHECK-NOT:  memref.load
// CHECK:      return %[[DW]], %[[DWPE]], %{{.*}}, %{{.*}}, %[[DB]], %{{.*}} :
// FP32-LABEL: func.func @bwd(
// FP32:       call @bp_embedding_bwd(
// FP32:       call @bp_add_fwd(
func.func @bwd(%tok: tensor<2x4xi32>, %x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %w: tensor<16x8xf32>, %qkv: tensor<2x4x24xf32>, %logits: tensor<2x4x16xf32>, %lab: tensor<2x4xi32>) -> (tensor<16x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>, tensor<2x4x24xf32>) {
  %one = arith.constant dense<1.000000e+00> : tensor<f32>
  %dl = nn.cross_entropy_grad %logits, %lab, %one : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  %dx = nn.linear_input_grad %dl, %w : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %dw, %db = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>)
  %dqkv = nn.attention_grad %qkv, %dx heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %dh, %dg, %dbeta = nn.layer_norm_grad %x, %g, %dx : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dsum = nn.add %dh, %dx : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dwte, %dwpe = nn.embedding_grad %tok, %dsum : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  %dwt = nn.add %dw, %dwte : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %dwt, %dwpe, %dg, %dbeta, %db, %dqkv : tensor<16x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>, tensor<2x4x24xf32>
}

// A call's results have the callee's storage types: a returned parameter
// gradient stays f32 on both sides.
// CHECK-LABEL: func.func @grads(
// CHECK-SAME: -> (memref<16x8xf32>, memref<2x4x8xbf16>)
// CHECK-LABEL: func.func @calls_grads(
// CHECK:      call @grads(%{{.*}}, %{{.*}}) : (memref<2x4x8xbf16>, memref<2x4x16xbf16>) -> (memref<16x8xf32>, memref<2x4x8xbf16>)
// CHECK:      return %{{.*}} : memref<16x8xf32>
func.func @grads(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x16xf32>) -> (tensor<16x8xf32>, tensor<2x4x8xf32>) {
  %dw = nn.linear_weight_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
  %g = nn.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %dw, %g : tensor<16x8xf32>, tensor<2x4x8xf32>
}
func.func @calls_grads(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x16xf32>) -> tensor<16x8xf32> {
  %dw, %g = call @grads(%x, %dy) : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> (tensor<16x8xf32>, tensor<2x4x8xf32>)
  return %dw : tensor<16x8xf32>
}

// Three uses of one weight: the sums chain into the first gradient's buffer.
// CHECK-LABEL: func.func @three_uses(
// CHECK:      %[[D1:.*]] = memref.alloc() : memref<8x8xf32>
// CHECK:      call @bp_fill(
// CHECK:      call @bp_linear_bwd_weight_bf16(
// CHECK-NOT:  memref.alloc() : memref<8x8xf32>
// CHECK:      call @bp_linear_bwd_weight_bf16(
// CHECK-NOT:  memref.alloc() : memref<8x8xf32>
// CHECK:      call @bp_linear_bwd_weight_bf16(
// CHECK-NOT:  call @bp_add_fwd
// CHECK:      return %[[D1]] : memref<8x8xf32>
// FP32-LABEL: func.func @three_uses(
// FP32-COUNT-2: call @bp_add_fwd(
func.func @three_uses(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %d1 = nn.linear_weight_grad %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %d2 = nn.linear_weight_grad %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = nn.add %d1, %d2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %d3 = nn.linear_weight_grad %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %t = nn.add %d3, %s : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}

// A statistic the forward returns for its backward (attention's log-sum-exps)
// stays f32, in the forward's results and in the backward's saved argument;
// the saved output is an activation (bf16).
// CHECK-LABEL: func.func @stats_stage(
// CHECK-SAME: -> (memref<2x4x8xbf16>, memref<2x4x8xbf16> {bitpipe.saved = 0 : i64}, memref<2x2x4xf32> {bitpipe.saved = 1 : i64})
// CHECK-LABEL: func.func private @stats_stage_bwd(
// CHECK-SAME: memref<2x4x8xbf16> {bitpipe.saved = 0 : i64}, %{{.*}}: memref<2x2x4xf32> {bitpipe.saved = 1 : i64}
// CHECK:      call @bp_attention_bwd_bf16(
func.func @stats_stage(%qkv: tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32> {bitpipe.saved = 0 : i64}, tensor<2x2x4xf32> {bitpipe.saved = 1 : i64}) attributes {bitpipe.backward = @stats_stage_bwd} {
  %a, %lse = nn.attention %qkv heads(2) causal with_stats : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  return %a, %a, %lse : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4xf32>
}
func.func private @stats_stage_bwd(%qkv: tensor<2x4x24xf32> {bitpipe.forward_arg = 0 : i64}, %out: tensor<2x4x8xf32> {bitpipe.saved = 0 : i64}, %lse: tensor<2x2x4xf32> {bitpipe.saved = 1 : i64}, %g: tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<2x4x24xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @stats_stage} {
  %d = nn.attention_grad %qkv, %g saved(%out, %lse) heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4xf32>) -> tensor<2x4x24xf32>
  return %d : tensor<2x4x24xf32>
}
