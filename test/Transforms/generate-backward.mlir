// RUN: bitpipe-opt %s --split-input-file --bitpipe-generate-backward | FileCheck %s
// RUN: bitpipe-opt %s --split-input-file --bitpipe-generate-backward=split | FileCheck %s --check-prefix=SPLIT
// RUN: bitpipe-opt %s --split-input-file --bitpipe-generate-backward=recompute=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: bitpipe-opt %s --split-input-file --bitpipe-generate-backward=recompute=full | FileCheck %s --check-prefix=FULL
// RUN: bitpipe-opt %s --split-input-file --bitpipe-generate-backward="recompute=full split" | FileCheck %s --check-prefix=FULL-SPLIT

// An MLP block with a residual: the input x fans out (layer norm and the
// residual add), so its gradient is a sum; the forward now returns the op
// results its backward reads: the layer norm's statistics (it returns them
// with_stats) and three activations. A module that keeps everything does
// not say so; one that recomputes records what (bitpipe.recompute, which
// the costs read from IR count).

// CHECK-NOT: bitpipe.recompute
// SELECTIVE: module attributes {bitpipe.recompute = #bitpipe.recompute<selective>}
// FULL: module attributes {bitpipe.recompute = #bitpipe.recompute<full>}
// CHECK-LABEL: func.func @mlp_stage1(
// CHECK-SAME: -> (tensor<2x4x8xf32>, tensor<2x4xf32> {bitpipe.saved = 0 : i64}, tensor<2x4xf32> {bitpipe.saved = 1 : i64}, tensor<2x4x8xf32> {bitpipe.saved = 2 : i64}, tensor<2x4x16xf32> {bitpipe.saved = 3 : i64}, tensor<2x4x16xf32> {bitpipe.saved = 4 : i64})
// CHECK-SAME: attributes {bitpipe.backward = @mlp_stage1_bwd, bitpipe.stage = 1 : i64}
// CHECK:      %[[LN:[a-z0-9_]+]], %[[STATS:[a-z0-9_]+]]:2 = nn.layer_norm %{{.*}} with_stats {nn.layer = 1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK:      %[[H:.*]] = nn.linear %[[LN]]
// CHECK:      %[[GE:.*]] = nn.gelu %[[H]]
// CHECK:      %[[R:.*]] = nn.add
// CHECK:      return %[[R]], %[[STATS]]#0, %[[STATS]]#1, %[[LN]], %[[H]], %[[GE]]

// The backward takes the forward arguments it reads (x, the gain and both
// weights; not the layer-norm bias; each names its forward argument), the saved values, and the output
// gradient; it returns a gradient per forward argument.
// CHECK-LABEL: func.func private @mlp_stage1_bwd(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.forward_arg = 0 : i64},
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<8xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "ln.weight"},
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<16x8xf32> {bitpipe.forward_arg = 3 : i64, nn.param = "fc.weight"},
// CHECK-SAME: %[[W2:[a-z0-9]+]]: tensor<8x16xf32> {bitpipe.forward_arg = 4 : i64, nn.param = "proj.weight"},
// CHECK-SAME: %[[MEAN:[a-z0-9]+]]: tensor<2x4xf32> {bitpipe.saved = 0 : i64},
// CHECK-SAME: %[[RSTD:[a-z0-9]+]]: tensor<2x4xf32> {bitpipe.saved = 1 : i64},
// CHECK-SAME: %[[SLN:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.saved = 2 : i64},
// CHECK-SAME: %[[SH:[a-z0-9]+]]: tensor<2x4x16xf32> {bitpipe.saved = 3 : i64},
// CHECK-SAME: %[[SGE:[a-z0-9]+]]: tensor<2x4x16xf32> {bitpipe.saved = 4 : i64},
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64})
// CHECK-SAME: -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64},
// CHECK-SAME: tensor<8xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "ln.weight"},
// CHECK-SAME: tensor<8xf32> {bitpipe.grad_of_arg = 2 : i64, nn.param = "ln.bias"},
// CHECK-SAME: tensor<16x8xf32> {bitpipe.grad_of_arg = 3 : i64, nn.param = "fc.weight"},
// CHECK-SAME: tensor<8x16xf32> {bitpipe.grad_of_arg = 4 : i64, nn.param = "proj.weight"})
// CHECK-SAME: attributes {bitpipe.backward_of = @mlp_stage1}
// CHECK:      %[[DGE:.*]] = nn.linear_input_grad %[[DY]], %[[W2]]
// CHECK:      %[[DW2:.*]] = nn.linear_weight_grad %[[SGE]], %[[DY]]
// CHECK:      %[[DH:.*]] = nn.gelu_grad %[[SH]], %[[DGE]]
// CHECK:      %[[DLN:.*]] = nn.linear_input_grad %[[DH]], %[[W1]]
// CHECK:      %[[DW1:.*]] = nn.linear_weight_grad %[[SLN]], %[[DH]]
// CHECK:      %[[DX1:.*]], %[[DG:.*]], %[[DB:.*]] = nn.layer_norm_grad %[[X]], %[[G]], %[[DLN]], %[[MEAN]], %[[RSTD]]
// CHECK:      %[[DX:.*]] = nn.add %[[DY]], %[[DX1]] {nn.layer = 1 : i64}
// CHECK:      return %[[DX]], %[[DG]], %[[DB]], %[[DW1]], %[[DW2]]

// Split: the weight gradients move to their own function; the input half
// stashes the gradient of the first linear's output for it.
// SPLIT-LABEL: func.func @mlp_stage1(
// SPLIT-SAME: bitpipe.backward_input = @mlp_stage1_bwd_input, bitpipe.backward_weight = @mlp_stage1_bwd_weight
// SPLIT-LABEL: func.func private @mlp_stage1_bwd_input(
// SPLIT-SAME: -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}, tensor<8xf32> {{{.*}}"ln.weight"}, tensor<8xf32> {{{.*}}"ln.bias"}, tensor<2x4x16xf32> {bitpipe.stash = 0 : i64})
// SPLIT-NOT:  nn.linear_weight_grad
// SPLIT:      %[[DH:.*]] = nn.gelu_grad
// SPLIT-NOT:  nn.linear_weight_grad
// SPLIT:      return {{.*}}, %[[DH]] :
// SPLIT-LABEL: func.func private @mlp_stage1_bwd_weight(
// SPLIT-SAME: %[[SLN:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.saved = 2 : i64},
// SPLIT-SAME: %[[SGE:[a-z0-9]+]]: tensor<2x4x16xf32> {bitpipe.saved = 4 : i64},
// SPLIT-SAME: %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64},
// SPLIT-SAME: %[[DH:[a-z0-9]+]]: tensor<2x4x16xf32> {bitpipe.stash = 0 : i64})
// SPLIT-SAME: -> (tensor<16x8xf32> {{{.*}}"fc.weight"}, tensor<8x16xf32> {{{.*}}"proj.weight"})
// SPLIT:      %[[DW2:.*]] = nn.linear_weight_grad %[[SGE]], %[[DY]]
// SPLIT:      %[[DW1:.*]] = nn.linear_weight_grad %[[SLN]], %[[DH]]
// SPLIT:      return %[[DW1]], %[[DW2]]
func.func @mlp_stage1(%x: tensor<2x4x8xf32>, %g: tensor<8xf32> {nn.param = "ln.weight"}, %b: tensor<8xf32> {nn.param = "ln.bias"}, %w: tensor<16x8xf32> {nn.param = "fc.weight"}, %w2: tensor<8x16xf32> {nn.param = "proj.weight"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 1 : i64} {
  %ln = nn.layer_norm %x, %g, %b {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %h = nn.linear %ln, %w {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %ge = nn.gelu %h {nn.layer = 1} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %p = nn.linear %ge, %w2 {nn.layer = 1} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %p {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// One stage holding both ends of a tied embedding: the output projection's
// weight gradient and the embedding gradient of the same parameter are two
// results, not summed here: the runtime adds each into the parameter's
// float64 accumulator, as it does when the two ends are stages on two
// ranks. The loss is seeded with 1; tokens and labels get no gradient. The
// cross-entropy returns its rows' max and log-sum (with_stats), saved for
// its backward. The model function's call now receives the saved results
// too.

// CHECK-LABEL: func.func @tied(
// CHECK:      %[[C:.*]]:5 = call @tied_stage0(
// CHECK:      return %[[C]]#0 : tensor<f32>
// CHECK-LABEL: func.func @tied_stage0(
// CHECK-SAME: -> (tensor<f32>, tensor<2x4x8xf32> {bitpipe.saved = 0 : i64}, tensor<2x4x16xf32> {bitpipe.saved = 1 : i64}, tensor<2x4xf32> {bitpipe.saved = 2 : i64}, tensor<2x4xf32> {bitpipe.saved = 3 : i64})
// CHECK:      %[[LOSS:[a-z0-9_]+]], %[[ROWS:[a-z0-9_]+]]:2 = nn.cross_entropy %{{.*}}, %{{.*}} with_stats
// CHECK-LABEL: func.func private @tied_stage0_bwd(
// CHECK-SAME: %[[TOK:[a-z0-9]+]]: tensor<2x4xi32> {bitpipe.forward_arg = 0 : i64, nn.input = "tokens"}
// CHECK-SAME: %[[WTE:[a-z0-9]+]]: tensor<16x8xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "embed.tokens"}
// CHECK-NOT:  grad_of_result
// CHECK-SAME: -> (tensor<16x8xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "embed.tokens"}, tensor<16x8xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "embed.tokens"}, tensor<4x8xf32> {bitpipe.grad_of_arg = 2 : i64, nn.param = "embed.positions"})
// CHECK:      %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK:      nn.cross_entropy_grad %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}} :
// CHECK:      %[[DWOUT:.*]] = nn.linear_weight_grad
// CHECK:      %[[DWTE:.*]], %[[DWPE:.*]] = nn.embedding_grad %[[TOK]]
// CHECK-NOT:  nn.add
// CHECK:      return %[[DWOUT]], %[[DWTE]], %[[DWPE]]

// Split, both contributions are weight work, returned by the weight half.
// SPLIT-LABEL: func.func private @tied_stage0_bwd_weight(
// SPLIT:      %[[DWOUT:.*]] = nn.linear_weight_grad
// SPLIT:      %[[DWTE:.*]], %[[DWPE:.*]] = nn.embedding_grad
// SPLIT-NOT:  nn.add
// SPLIT:      return %[[DWOUT]], %[[DWTE]], %[[DWPE]]
func.func @tied(%tok: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>, %lab: tensor<2x4xi32>) -> tensor<f32> {
  %l = call @tied_stage0(%tok, %wte, %wpe, %lab) : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @tied_stage0(%tok: tensor<2x4xi32> {nn.input = "tokens"}, %wte: tensor<16x8xf32> {nn.param = "embed.tokens"}, %wpe: tensor<4x8xf32> {nn.param = "embed.positions"}, %lab: tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64} {
  %x = nn.embedding %tok, %wte, %wpe {nn.layer = 0} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %logits = nn.linear %x, %wte {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %lab {nn.layer = 1} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A LLaMA layer (docs/llama.md): the rotary embedding keeps nothing (its
// backward is the inverse rotation of the gradient), so its input is not
// saved, only its output, which the attention reads; the attention returns
// its log-sum-exps (with_stats), which are saved with its output (saved
// already as the MLP's input); RMSNorm keeps its input (a forward
// argument), gain and rows' rstd; SwiGLU keeps gate and up.
// Without saved statistics the norm and the attention keep their one
// result and their backward runs the forward again
// (bitpipe-lower-nn-to-runtime).
// Full recomputation: the forward returns its output only; the backward
// takes the forward arguments and runs the forward ops again (the statistics
// forms: the backward ops read what the recomputation produced), then the
// backward rules.
// FULL-LABEL: func.func @llama_stage1(
// FULL-SAME: -> tensor<2x4x8xf32>
// FULL-LABEL: func.func private @llama_stage1_bwd(
// FULL-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.forward_arg = 0 : i64},
// FULL-NOT:  bitpipe.saved
// FULL-SAME: %[[WDOWN:[a-z0-9]+]]: tensor<8x12xf32> {bitpipe.forward_arg = 5 : i64, nn.param = "mlp.down.weight"},
// FULL-SAME: %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64})
// FULL:      %[[N:[a-z0-9_]+]], %[[RSTD:[a-z0-9_]+]] = nn.rms_norm %[[X]], %{{.*}} with_stats
// FULL:      %[[A:[a-z0-9_]+]], %[[LSE:[a-z0-9_]+]] = nn.attention %{{.*}} with_stats
// FULL:      nn.swiglu
// FULL-NOT:  nn.linear %{{.*}}, %[[WDOWN]] :
// FULL:      nn.linear_input_grad %[[DY]], %[[WDOWN]]
// FULL:      nn.attention_grad %{{.*}}, %{{.*}} saved(%[[A]], %[[LSE]])
// FULL:      nn.rms_norm_grad %[[X]], %{{.*}}, %{{.*}}, %[[RSTD]]
// The split halves: the input half recomputes and stashes what the weight
// half reads.
// FULL-SPLIT-LABEL: func.func private @llama_stage1_bwd_input(
// FULL-SPLIT:      nn.rms_norm
// FULL-SPLIT:      nn.attention_grad
// FULL-SPLIT-LABEL: func.func private @llama_stage1_bwd_weight(
// FULL-SPLIT-NOT:  nn.attention
// FULL-SPLIT:      nn.linear_weight_grad
// SELECTIVE-LABEL: func.func @llama_stage1(
// SELECTIVE-SAME: -> (tensor<2x4x8xf32>, tensor<2x4x8xf32> {bitpipe.saved = 0 : i64}, tensor<2x4x16xf32> {bitpipe.saved = 1 : i64}, tensor<2x4x8xf32> {bitpipe.saved = 2 : i64}, tensor<2x4x12xf32> {bitpipe.saved = 3 : i64}, tensor<2x4x12xf32> {bitpipe.saved = 4 : i64}, tensor<2x4x12xf32> {bitpipe.saved = 5 : i64})
// SELECTIVE:      nn.rms_norm %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// SELECTIVE:      nn.attention %{{.*}} heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
// SELECTIVE-LABEL: func.func private @llama_stage1_bwd(
// SELECTIVE:      nn.attention_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}} heads(2) kv_heads(1) causal :
// SELECTIVE:      nn.rms_norm_grad %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} :
// CHECK-LABEL: func.func @llama_stage1(
// CHECK-SAME: -> (tensor<2x4x8xf32>, tensor<2x4xf32> {bitpipe.saved = 0 : i64}, tensor<2x4x8xf32> {bitpipe.saved = 1 : i64}, tensor<2x4x16xf32> {bitpipe.saved = 2 : i64}, tensor<2x4x8xf32> {bitpipe.saved = 3 : i64}, tensor<2x2x4xf32> {bitpipe.saved = 4 : i64}, tensor<2x4x12xf32> {bitpipe.saved = 5 : i64}, tensor<2x4x12xf32> {bitpipe.saved = 6 : i64}, tensor<2x4x12xf32> {bitpipe.saved = 7 : i64})
// CHECK:      %[[N:[a-z0-9_]+]], %[[NSTATS:[a-z0-9_]+]] = nn.rms_norm {{.*}} with_stats
// CHECK:      %[[QKV:.*]] = nn.linear %[[N]]
// CHECK:      %[[ROT:.*]] = nn.rotary %[[QKV]] heads(2) kv_heads(1)
// CHECK:      %[[A:.*]], %[[LSE:.*]] = nn.attention %[[ROT]] heads(2) kv_heads(1) causal with_stats : (tensor<2x4x16xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
// CHECK:      %[[GATE:.*]] = nn.linear %[[A]]
// CHECK:      %[[UP:.*]] = nn.linear %[[A]]
// CHECK:      %[[S:.*]] = nn.swiglu %[[GATE]], %[[UP]]
// CHECK:      return %{{.*}}, %[[NSTATS]], %[[N]], %[[ROT]], %[[A]], %[[LSE]], %[[GATE]], %[[UP]], %[[S]]
// CHECK-LABEL: func.func private @llama_stage1_bwd(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.forward_arg = 0 : i64},
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<8xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "ln1.weight"},
// CHECK-SAME: %[[SRSTD:[a-z0-9]+]]: tensor<2x4xf32> {bitpipe.saved = 0 : i64},
// CHECK-SAME: %[[SROT:[a-z0-9]+]]: tensor<2x4x16xf32> {bitpipe.saved = 2 : i64},
// CHECK-SAME: %[[SA:[a-z0-9]+]]: tensor<2x4x8xf32> {bitpipe.saved = 3 : i64},
// CHECK-SAME: %[[SLSE:[a-z0-9]+]]: tensor<2x2x4xf32> {bitpipe.saved = 4 : i64},
// CHECK-SAME: %[[SGATE:[a-z0-9]+]]: tensor<2x4x12xf32> {bitpipe.saved = 5 : i64},
// CHECK-SAME: %[[SUP:[a-z0-9]+]]: tensor<2x4x12xf32> {bitpipe.saved = 6 : i64},
// CHECK:      %[[DGATE:.*]], %[[DUP:.*]] = nn.swiglu_grad %[[SGATE]], %[[SUP]], %{{.*}} :
// CHECK:      %[[DQKV:.*]] = nn.attention_grad %[[SROT]], %{{.*}} saved(%[[SA]], %[[SLSE]]) heads(2) kv_heads(1) causal
// CHECK:      %[[DROT:.*]] = nn.rotary_grad %[[DQKV]] heads(2) kv_heads(1) :
// CHECK:      nn.linear_input_grad %[[DROT]]
// CHECK:      %{{.*}}, %[[DG:.*]] = nn.rms_norm_grad %[[X]], %[[G]], %{{.*}}, %[[SRSTD]] :
// CHECK:      return %{{.*}}, %[[DG]],
// SPLIT-LABEL: func.func private @llama_stage1_bwd_input(
// SPLIT:      nn.attention_grad {{.*}} saved(
// SPLIT:      nn.rms_norm_grad
// SPLIT-LABEL: func.func private @llama_stage1_bwd_weight(
// SPLIT-NOT:  nn.rms_norm_grad
// SPLIT-NOT:  nn.rotary_grad
// SPLIT:      return
func.func @llama_stage1(%x: tensor<2x4x8xf32>, %g: tensor<8xf32> {nn.param = "ln1.weight"}, %wqkv: tensor<16x8xf32> {nn.param = "attn.qkv.weight"}, %wgate: tensor<12x8xf32> {nn.param = "mlp.gate.weight"}, %wup: tensor<12x8xf32> {nn.param = "mlp.up.weight"}, %wdown: tensor<8x12xf32> {nn.param = "mlp.down.weight"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 1 : i64} {
  %n = nn.rms_norm %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = nn.linear %n, %wqkv : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %rot = nn.rotary %qkv heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %a = nn.attention %rot heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  %gate = nn.linear %a, %wgate : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %up = nn.linear %a, %wup : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %s = nn.swiglu %gate, %up : (tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  %d = nn.linear %s, %wdown : (tensor<2x4x12xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %d : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// The exact GELU's backward rule keeps its form.
// CHECK-LABEL: func.func private @erf_stage0_bwd(
// CHECK:      nn.gelu_grad %{{.*}}, %{{.*}} form(erf)
func.func @erf_stage0(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64} {
  %y = nn.gelu %x form(erf) {nn.layer = 1} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
