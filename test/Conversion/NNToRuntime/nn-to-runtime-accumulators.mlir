// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime=target=cuda | FileCheck %s --check-prefix=CUDA
// RUN: bitpipe-opt %s '--bitpipe-lower-nn-to-runtime=target=cuda precision=bf16' | FileCheck %s --check-prefix=BF16

// A backward stage function's parameter gradients (its nn.param results)
// accumulate in place: each becomes a trailing argument, the rank's
// accumulator of that parameter (float64 on the CPU), and the kernels that
// make it add into it. The tied weight's two gradients (the head's and the
// embedding's) both add into its one accumulator; their nn.add goes. No
// gradient buffer is allocated or zeroed.

// CHECK-LABEL: func.func @stage_bwd(
// CHECK-SAME:      %[[TOK:[a-z0-9]+]]: memref<2x4xi32>, %[[X:[a-z0-9]+]]: memref<2x4x8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %[[DL:[a-z0-9]+]]: memref<2x4x16xf32>, %{{[a-z0-9]+}}: memref<2x4x8xf32>,
// CHECK-SAME:      %[[WTE:[a-z0-9]+]]: memref<16x8xf64>, %[[WPE:[a-z0-9]+]]: memref<4x8xf64>, %[[G:[a-z0-9]+]]: memref<8xf64>, %[[BETA:[a-z0-9]+]]: memref<8xf64>, %[[HB:[a-z0-9]+]]: memref<16xf64>)
// CHECK-SAME:      -> (memref<2x4x8xf32> {bitpipe.grad_of_arg = 1 : i64})
// CHECK-SAME:      attributes {bitpipe.accumulated_results = array<i64: 0, 1, 2, 3, 4>}
// CHECK-NOT:     bp_fill
// CHECK:         memref.extract_aligned_pointer_as_index %[[DL]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[WTE]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[HB]]
// CHECK:         call @bp_linear_bwd_weight_g64(
// CHECK:         memref.extract_aligned_pointer_as_index %[[G]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[BETA]]
// CHECK:         call @bp_layer_norm_bwd_g64(
// CHECK:         memref.extract_aligned_pointer_as_index %[[WTE]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[WPE]]
// CHECK:         call @bp_embedding_bwd_g64(
// CHECK-NOT:     bp_add_fwd
// CHECK-NOT:     bp_fill
// CHECK:         return %{{.*}} : memref<2x4x8xf32>

// On CUDA the accumulators are fp32: the kernels' plain forms.
// CUDA-LABEL: func.func @stage_bwd(
// CUDA-SAME:      memref<16x8xf32>, %{{[a-z0-9]+}}: memref<4x8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: memref<16xf32>)
// CUDA-SAME:      attributes {bitpipe.accumulated_results = array<i64: 0, 1, 2, 3, 4>}
// CUDA-NOT:     bp_fill
// CUDA:         call @bp_linear_bwd_weight(
// CUDA:         call @bp_layer_norm_bwd(
// CUDA:         call @bp_embedding_bwd(
// CUDA-NOT:     bp_add_fwd

// Under bf16 the activations are bf16 buffers and the accumulators stay
// fp32 (the accumulator arguments join after the retyping): the kernels'
// bf16 forms add into them.
// BF16-LABEL: func.func @stage_bwd(
// BF16-SAME:      %{{[a-z0-9]+}}: memref<2x4xi32>, %{{[a-z0-9]+}}: memref<2x4x8xbf16>,
// BF16-SAME:      memref<16x8xf32>, %{{[a-z0-9]+}}: memref<4x8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: memref<16xf32>)
// BF16-SAME:      -> (memref<2x4x8xbf16> {bitpipe.grad_of_arg = 1 : i64})
// BF16-NOT:     bp_fill
// BF16:         call @bp_linear_bwd_weight_bf16(
// BF16:         call @bp_layer_norm_bwd_bf16(
// BF16:         call @bp_embedding_bwd_bf16(
// BF16-NOT:     bp_add_fwd
func.func @stage_bwd(%tok: tensor<2x4xi32>, %x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %dl: tensor<2x4x16xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<16x8xf32> {nn.param = "wte"}, tensor<4x8xf32> {nn.param = "wpe"}, tensor<8xf32> {nn.param = "ln.weight"}, tensor<8xf32> {nn.param = "ln.bias"}, tensor<16xf32> {nn.param = "head.bias"}, tensor<2x4x8xf32> {bitpipe.grad_of_arg = 1 : i64}) {
  %dw, %db = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>)
  %dh, %dg, %dbeta = nn.layer_norm_grad %x, %g, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dwte, %dwpe = nn.embedding_grad %tok, %dh : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  %tied = nn.add %dw, %dwte : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %tied, %dwpe, %dg, %dbeta, %db, %dh : tensor<16x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>, tensor<2x4x8xf32>
}

// A weight gradient of a split backward's weight half accumulates alike.
// CHECK-LABEL: func.func @weight_half(
// CHECK-SAME:      %{{[a-z0-9]+}}: memref<2x4x8xf32>, %{{[a-z0-9]+}}: memref<2x4x16xf32>, %[[ACC:[a-z0-9]+]]: memref<16x8xf64>)
// CHECK-NOT:     -> 
// CHECK-SAME:      attributes {bitpipe.accumulated_results = array<i64: 0>}
// CHECK:         memref.extract_aligned_pointer_as_index %[[ACC]]
// CHECK:         call @bp_linear_bwd_weight_g64(
// CHECK:         return{{$}}
func.func @weight_half(%x: tensor<2x4x8xf32>, %dl: tensor<2x4x16xf32>) -> (tensor<16x8xf32> {nn.param = "head.weight"}) {
  %dw = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}
