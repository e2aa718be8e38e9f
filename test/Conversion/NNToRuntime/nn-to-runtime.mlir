// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime | grep -c "func.func private @bp_linear_fwd" | FileCheck %s --check-prefix=ONCE
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime --bitpipe-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: bitpipe-opt %s --bitpipe-lower-nn-to-runtime --bitpipe-lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// Each kernel is declared once per module, with the ABI's C types; errors
// are reported with the op's name.
// ONCE: {{^1$}}
// CHECK-DAG: func.func private @bp_linear_fwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
// CHECK-DAG: func.func private @bp_cross_entropy_bwd(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i32) -> i32
// CHECK-DAG: func.func private @bp_check(i32, !llvm.ptr){{$}}
// CHECK-DAG: func.func private @bp_fill(!llvm.ptr, f32, i64) -> i32
// CHECK-DAG: llvm.mlir.global internal constant @__bp_name_nn_linear("nn.linear\00")

// A tensor becomes a memref of its shape; the result gets a fresh buffer;
// pointers are the buffers' aligned addresses; sizes are constants
// (N = 2*3 rows, In = 8, Out = 16); the status goes to bp_check.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<2x3x8xf32>, %[[W:[a-z0-9]+]]: memref<16x8xf32>, %[[B:[a-z0-9]+]]: memref<16xf32>) -> memref<2x3x16xf32>
// CHECK:      %[[Y:.*]] = memref.alloc() : memref<2x3x16xf32>
// CHECK:      %[[XI:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:      %[[XL:.*]] = arith.index_cast %[[XI]] : index to i64
// CHECK:      %[[XP:.*]] = llvm.inttoptr %[[XL]] : i64 to !llvm.ptr
// CHECK:      memref.extract_aligned_pointer_as_index %[[W]]
// CHECK:      %[[WP:.*]] = llvm.inttoptr
// CHECK:      memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:      %[[BP:.*]] = llvm.inttoptr
// CHECK:      memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK:      %[[YP:.*]] = llvm.inttoptr
// CHECK:      %[[N:.*]] = arith.constant 6 : i64
// CHECK:      %[[IN:.*]] = arith.constant 8 : i64
// CHECK:      %[[OUT:.*]] = arith.constant 16 : i64
// CHECK:      %[[S:.*]] = call @bp_linear_fwd(%[[XP]], %[[WP]], %[[BP]], %[[YP]], %[[N]], %[[IN]], %[[OUT]])
// CHECK:      %[[NAME:.*]] = llvm.mlir.addressof @__bp_name_nn_linear : !llvm.ptr
// CHECK:      call @bp_check(%[[S]], %[[NAME]]) : (i32, !llvm.ptr) -> ()
// CHECK-NOT:  memref.dealloc
// CHECK:      return %[[Y]] : memref<2x3x16xf32>
// LLVM-LABEL: llvm.func @linear(
// LLVM-SAME:  %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) -> !llvm.ptr
// LLVM:       llvm.call @_mlir_memref_to_llvm_alloc
// LLVM:       llvm.call @bp_linear_fwd
// LLVMIR-DAG: declare i32 @bp_linear_fwd(ptr, ptr, ptr, ptr, i64, i64, i64)
// LLVMIR-DAG: declare void @bp_check(i32, ptr)
// LLVMIR-DAG: define ptr @linear(ptr %0, ptr %1, ptr %2)
func.func @linear(%x: tensor<2x3x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<2x3x16xf32> {
  %y = nn.linear %x, %w, %b : (tensor<2x3x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// No bias: a null pointer.
// CHECK-LABEL: func.func @linear_no_bias(
// CHECK:      %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:      call @bp_linear_fwd(%{{.*}}, %{{.*}}, %[[NULL]], %{{.*}})
func.func @linear_no_bias(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x4x16xf32> {
  %y = nn.linear %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// Every forward op; statistics the nn ops do not return (layer-norm mean
// and rstd, attention lse) live in scratch freed after the kernel; each
// temporary is freed right after its last use; the returned values are not.
// CHECK-LABEL: func.func @stage(
// CHECK:      %[[X:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      call @bp_embedding_fwd(
// CHECK:      %[[H:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      %[[MEAN:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      %[[RSTD:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_layer_norm_fwd(
// CHECK:      call @bp_check
// CHECK-DAG:  memref.dealloc %[[MEAN]]
// CHECK-DAG:  memref.dealloc %[[RSTD]]
// CHECK:      %[[QKV:.*]] = memref.alloc() : memref<2x4x24xf32>
// CHECK:      call @bp_linear_fwd(
// CHECK:      call @bp_check
// CHECK-NEXT: memref.dealloc %[[H]]
// CHECK:      %[[A:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      %[[LSE:.*]] = memref.alloc() : memref<2x2x4xf32>
// CHECK:      %[[CAUSAL:.*]] = arith.constant 1 : i32
// CHECK:      call @bp_attention_fwd({{.*}}, %[[CAUSAL]])
// CHECK:      call @bp_check
// CHECK-NEXT: memref.dealloc %[[LSE]]
// CHECK:      %[[GE:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      call @bp_gelu_fwd(
// CHECK:      call @bp_check
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK:      %[[R:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:      memref.extract_aligned_pointer_as_index %[[GE]]
// CHECK:      call @bp_add_fwd(
// CHECK:      call @bp_check
// CHECK-DAG:  memref.dealloc %[[GE]]
// CHECK-DAG:  memref.dealloc %[[X]]
// CHECK:      call @bp_linear_fwd(
// CHECK:      %[[LOSS:.*]] = memref.alloc() : memref<f32>
// CHECK:      %[[IGNORE:.*]] = arith.constant -100 : i32
// CHECK:      call @bp_cross_entropy_fwd({{.*}}, %[[IGNORE]])
// CHECK-NOT:  memref.dealloc %[[QKV]]
// CHECK-NOT:  memref.dealloc %[[LOSS]]
// CHECK:      return %[[LOSS]], %[[QKV]]
func.func @stage(%tok: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %wqkv: tensor<24x8xf32>, %lab: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x24xf32>) {
  %x = nn.embedding %tok, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %h = nn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = nn.linear %h, %wqkv : (tensor<2x4x8xf32>, tensor<24x8xf32>) -> tensor<2x4x24xf32>
  %a = nn.attention %qkv heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %ge = nn.gelu %a : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %ge : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = nn.linear %r, %wte : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %lab : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss, %qkv : tensor<f32>, tensor<2x4x24xf32>
}

// Backward ops. The loss seed is passed by address (its buffer lives where
// the tensors do: on the CUDA target the kernel reads it on the device);
// gradients the kernels
// accumulate (dw, db, dgamma, dbeta, dwte, dwpe) are zeroed before their
// kernel; cross-entropy, layer norm and attention recompute their forward
// statistics into scratch first (cross-entropy's forward also writes a loss
// that nothing reads).
// CHECK-LABEL: func.func @stage_bwd(
// CHECK:      %[[SEED:.*]] = memref.alloc() : memref<f32>
// CHECK:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:      call @bp_fill(%{{.*}}, %[[ONE]], %{{.*}})
// CHECK:      call @bp_check
// CHECK:      %[[DL:.*]] = memref.alloc() : memref<2x4x16xf32>
// CHECK:      %[[SCRATCHLOSS:.*]] = memref.alloc() : memref<1xf32>
// CHECK:      %[[MAX:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      %[[SUM:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_cross_entropy_fwd(
// CHECK:      memref.extract_aligned_pointer_as_index %[[SEED]]
// CHECK:      call @bp_cross_entropy_bwd(
// CHECK:      call @bp_check
// CHECK:      memref.dealloc %[[SEED]]
// CHECK:      call @bp_linear_bwd_input(
// CHECK:      %[[DW:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK:      memref.extract_aligned_pointer_as_index %[[DW]]
// CHECK:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:      call @bp_fill(%{{.*}}, %[[ZERO]], %{{.*}})
// CHECK:      %[[DB:.*]] = memref.alloc() : memref<16xf32>
// CHECK:      memref.extract_aligned_pointer_as_index %[[DB]]
// CHECK:      call @bp_fill(
// CHECK:      memref.extract_aligned_pointer_as_index %[[DW]]
// CHECK:      memref.extract_aligned_pointer_as_index %[[DB]]
// CHECK:      call @bp_linear_bwd_weight(
// CHECK:      call @bp_check
// CHECK-NEXT: memref.dealloc %[[DL]]
// CHECK:      call @bp_gelu_bwd(
// CHECK:      %[[DQKV:.*]] = memref.alloc() : memref<2x4x24xf32>
// CHECK:      %[[OUT:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      %[[LSE:.*]] = memref.alloc() : memref<2x2x4xf32>
// CHECK:      call @bp_attention_fwd(
// CHECK:      call @bp_attention_bwd(
// CHECK:      call @bp_check
// CHECK-DAG:  memref.dealloc %[[LSE]]
// CHECK-DAG:  memref.dealloc %[[OUT]]
// CHECK:      %[[DH:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      %[[DG:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_fill(
// CHECK:      %[[DBETA:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_fill(
// CHECK:      %[[MEAN:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      %[[RSTD:.*]] = memref.alloc() : memref<8xf32>
// CHECK:      call @bp_layer_norm_fwd(
// CHECK:      call @bp_layer_norm_bwd(
// CHECK:      call @bp_check
// CHECK-DAG:  memref.dealloc %[[MEAN]]
// CHECK-DAG:  memref.dealloc %[[RSTD]]
// CHECK:      call @bp_add_fwd(
// CHECK:      %[[DWTE:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK:      call @bp_fill(
// CHECK:      %[[DWPE:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK:      call @bp_fill(
// CHECK:      call @bp_embedding_bwd(
// CHECK:      %[[DWT:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK:      call @bp_add_fwd(
// CHECK:      call @bp_check
// CHECK-DAG:  memref.dealloc %[[DWTE]]
// CHECK-DAG:  memref.dealloc %[[DW]]
// CHECK-NOT:  memref.dealloc
// CHECK:      return %[[DWT]], %[[DWPE]], %[[DG]], %[[DBETA]], %[[DB]], %[[DQKV]] :
func.func @stage_bwd(%tok: tensor<2x4xi32>, %x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %w: tensor<16x8xf32>, %qkv: tensor<2x4x24xf32>, %logits: tensor<2x4x16xf32>, %lab: tensor<2x4xi32>) -> (tensor<16x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>, tensor<2x4x24xf32>) {
  %one = arith.constant dense<1.000000e+00> : tensor<f32>
  %dl = nn.cross_entropy_grad %logits, %lab, %one : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  %dx = nn.linear_input_grad %dl, %w : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %dw, %db = nn.linear_weight_grad %x, %dl : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>)
  %dge = nn.gelu_grad %x, %dx : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dqkv = nn.attention_grad %qkv, %dge heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %dh, %dg, %dbeta = nn.layer_norm_grad %x, %g, %dge : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dsum = nn.add %dh, %dx : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dwte, %dwpe = nn.embedding_grad %tok, %dsum : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  %dwt = nn.add %dw, %dwte : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %dwt, %dwpe, %dg, %dbeta, %db, %dqkv : tensor<16x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<16xf32>, tensor<2x4x24xf32>
}

// Returned buffers belong to the caller: a returned argument, and a value
// returned twice, are copied.
// CHECK-LABEL: func.func @aliasing(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<2x4x8xf32>)
// CHECK:      %[[Y:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      call @bp_gelu_fwd(
// CHECK:      %[[XC:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK-NEXT: memref.copy %[[X]], %[[XC]]
// CHECK-NEXT: %[[YC:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK-NEXT: memref.copy %[[Y]], %[[YC]]
// CHECK-NEXT: return %[[XC]], %[[Y]], %[[YC]] :
func.func @aliasing(%x: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %y = nn.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %x, %y, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// A caller owns what its calls return: the unused result is freed.
// CHECK-LABEL: func.func @caller(
// CHECK:      %[[A:.*]]:3 = call @aliasing(%{{.*}}) : (memref<2x4x8xf32>) -> (memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>)
// CHECK-NEXT: memref.dealloc %[[A]]#2
// CHECK:      %[[S:.*]] = memref.alloc()
// CHECK:      call @bp_add_fwd(
// CHECK:      call @bp_check
// CHECK-DAG:  memref.dealloc %[[A]]#0
// CHECK-DAG:  memref.dealloc %[[A]]#1
// CHECK:      return %[[S]]
func.func @caller(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %a:3 = call @aliasing(%x) : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %s = nn.add %a#0, %a#1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// Bidirectional attention (BERT): the kernels get causal = 0, in the
// forward and in the backward (which recomputes the forward's statistics
// with the same mask).
// CHECK-LABEL: func.func @bidirectional(
// CHECK:      %[[NOMASK:.*]] = arith.constant 0 : i32
// CHECK:      call @bp_attention_fwd({{.*}}, %[[NOMASK]]) :
// CHECK-LABEL: func.func @bidirectional_grad(
// CHECK:      %[[NOMASK:.*]] = arith.constant 0 : i32
// CHECK:      call @bp_attention_fwd({{.*}}, %[[NOMASK]]) :
// CHECK:      call @bp_attention_bwd({{.*}}, %[[NOMASK]]) :
func.func @bidirectional(%qkv: tensor<2x4x24xf32>) -> tensor<2x4x8xf32> {
  %a = nn.attention %qkv heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}
func.func @bidirectional_grad(%qkv: tensor<2x4x24xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x24xf32> {
  %d = nn.attention_grad %qkv, %g heads(2) : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  return %d : tensor<2x4x24xf32>
}

// With saved statistics (bitpipe-generate-backward's default) the forward
// writes its log-sum-exps into a result buffer, and the backward reads them
// and the saved output: one attention forward per micro-batch, not two.
// CHECK-LABEL: func.func @saved_statistics(
// CHECK-SAME: -> (memref<2x4x8xf32>, memref<2x2x4xf32>)
// CHECK:      %[[OUT:.*]] = memref.alloc() : memref<2x4x8xf32>
// CHECK:      %[[LSE:.*]] = memref.alloc() : memref<2x2x4xf32>
// CHECK:      call @bp_attention_fwd(
// CHECK:      return %[[OUT]], %[[LSE]]
// CHECK-LABEL: func.func @saved_statistics_grad(
// CHECK-NOT:  call @bp_attention_fwd(
// CHECK:      call @bp_attention_bwd(
// CHECK-NOT:  call @bp_attention_fwd(
// CHECK:      return
func.func @saved_statistics(%qkv: tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>) {
  %a, %lse = nn.attention %qkv heads(2) causal with_stats : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  return %a, %lse : tensor<2x4x8xf32>, tensor<2x2x4xf32>
}
func.func @saved_statistics_grad(%qkv: tensor<2x4x24xf32>, %g: tensor<2x4x8xf32>, %out: tensor<2x4x8xf32>, %lse: tensor<2x2x4xf32>) -> tensor<2x4x24xf32> {
  %d = nn.attention_grad %qkv, %g saved(%out, %lse) heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4xf32>) -> tensor<2x4x24xf32>
  return %d : tensor<2x4x24xf32>
}

// A layer norm with_stats writes mean and rstd into its results; its
// backward reads them and does not run the forward kernel again.
// CHECK-LABEL: func.func @norm_saved(
// CHECK-SAME: -> (memref<2x4x8xf32>, memref<2x4xf32>, memref<2x4xf32>)
// CHECK:      call @bp_layer_norm_fwd(
// CHECK-LABEL: func.func @norm_saved_grad(
// CHECK-NOT:  call @bp_layer_norm_fwd(
// CHECK:      call @bp_layer_norm_bwd(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}},
// CHECK-NOT:  call @bp_layer_norm_fwd(
// CHECK:      return
func.func @norm_saved(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %y, %mean, %rstd = nn.layer_norm %x, %g, %b with_stats : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return %y, %mean, %rstd : tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
func.func @norm_saved_grad(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x4x8xf32>, %mean: tensor<2x4xf32>, %rstd: tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy, %mean, %rstd : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %dg, %db : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}


// A cross-entropy with_stats writes its rows' max and log-sum into its
// results; its backward reads them, with no forward call and no scratch.
// CHECK-LABEL: func.func @loss_saved(
// CHECK-SAME: -> (memref<f32>, memref<2x4xf32>, memref<2x4xf32>)
// CHECK:      call @bp_cross_entropy_fwd(
// CHECK-LABEL: func.func @loss_saved_grad(
// CHECK-NOT:  call @bp_cross_entropy_fwd(
// CHECK-NOT:  memref<1xf32>
// CHECK:      call @bp_cross_entropy_bwd(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}},
// CHECK-NOT:  call @bp_cross_entropy_fwd(
// CHECK:      return
func.func @loss_saved(%logits: tensor<2x4x16xf32>, %lab: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %loss, %max, %sum = nn.cross_entropy %logits, %lab with_stats : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return %loss, %max, %sum : tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>
}
func.func @loss_saved_grad(%logits: tensor<2x4x16xf32>, %lab: tensor<2x4xi32>, %max: tensor<2x4xf32>, %sum: tensor<2x4xf32>) -> tensor<2x4x16xf32> {
  %one = arith.constant dense<1.000000e+00> : tensor<f32>
  %d = nn.cross_entropy_grad %logits, %lab, %one, %max, %sum : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4x16xf32>
  return %d : tensor<2x4x16xf32>
}
