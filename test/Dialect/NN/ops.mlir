// RUN: bitpipe-opt %s | bitpipe-opt | FileCheck %s
// RUN: bitpipe-opt %s --mlir-print-op-generic | bitpipe-opt | FileCheck %s

// One pre-LN GPT block with its embedding and loss, hidden 8, 2 heads.
// CHECK-LABEL: func @gpt_block
func.func @gpt_block(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>,
                     %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>,
                     %g: tensor<8xf32>, %b: tensor<8xf32>,
                     %wqkv: tensor<24x8xf32>, %bqkv: tensor<24xf32>,
                     %wfc: tensor<32x8xf32>, %wproj: tensor<8x32xf32>) -> tensor<f32> {
  // CHECK: %[[X:.*]] = nn.embedding %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %x = nn.embedding %tokens, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[LN:.*]] = nn.layer_norm %[[X]], %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %ln = nn.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.layer_norm %[[X]], %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32}
  %ln2 = nn.layer_norm %x, %g, %b {epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[QKV:.*]] = nn.linear %[[LN]], %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %qkv = nn.linear %ln, %wqkv, %bqkv : (tensor<2x4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  // CHECK: %[[A:.*]] = nn.attention %[[QKV]] heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %a = nn.attention %qkv heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.attention %[[QKV]] heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %bi = nn.attention %qkv heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[S:.*]], %[[LSE:.*]] = nn.attention %[[QKV]] heads(2) causal with_stats : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  %sa, %lse = nn.attention %qkv heads(2) causal with_stats : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  // CHECK: %[[R:.*]] = nn.add %[[X]], %[[A]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[H:.*]] = nn.linear %[[R]], %{{.*}} : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %h = nn.linear %r, %wfc : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  // CHECK: %[[GE:.*]] = nn.gelu %[[H]] : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %ge = nn.gelu %h : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  // CHECK: nn.gelu %[[H]] form(erf) : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %gerf = nn.gelu %h form(erf) : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %p = nn.linear %ge, %wproj : (tensor<2x4x32xf32>, tensor<8x32xf32>) -> tensor<2x4x8xf32>
  // Output projection tied to the token embedding: no bias.
  // CHECK: %[[LOGITS:.*]] = nn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %logits = nn.linear %p, %wte : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: %[[LOSS:.*]] = nn.cross_entropy %[[LOGITS]], %{{.*}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  // CHECK: nn.cross_entropy %[[LOGITS]], %{{.*}} {ignore_index = 0 : i64}
  %loss0 = nn.cross_entropy %logits, %labels {ignore_index = 0} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  // CHECK: return %[[LOSS]]
  return %loss : tensor<f32>
}

// CHECK-LABEL: func @backward_ops
func.func @backward_ops(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>,
                        %x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>,
                        %g: tensor<8xf32>, %w: tensor<24x8xf32>,
                        %qkv: tensor<2x4x24xf32>, %dqkvout: tensor<2x4x24xf32>,
                        %logits: tensor<2x4x16xf32>, %dloss: tensor<f32>) {
  // CHECK: nn.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  %dwte, %dwpe = nn.embedding_grad %tokens, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  // CHECK: nn.layer_norm_grad
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: nn.linear_input_grad %{{.*}}, %{{.*}} : (tensor<2x4x24xf32>, tensor<24x8xf32>) -> tensor<2x4x8xf32>
  %dlin = nn.linear_input_grad %dqkvout, %w : (tensor<2x4x24xf32>, tensor<24x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.linear_weight_grad %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4x24xf32>) -> (tensor<24x8xf32>, tensor<24xf32>)
  %dw, %dbias = nn.linear_weight_grad %x, %dqkvout : (tensor<2x4x8xf32>, tensor<2x4x24xf32>) -> (tensor<24x8xf32>, tensor<24xf32>)
  // CHECK: nn.linear_weight_grad %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4x24xf32>) -> tensor<24x8xf32>
  %dwonly = nn.linear_weight_grad %x, %dqkvout : (tensor<2x4x8xf32>, tensor<2x4x24xf32>) -> tensor<24x8xf32>
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}} heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %dqkv = nn.attention_grad %qkv, %dy heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dge = nn.gelu_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // The exact GELU's gradient keeps its form; the tanh form is elided.
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} form(erf) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dgerf = nn.gelu_grad %x, %dy form(erf) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dgtanh = nn.gelu_grad %x, %dy form(tanh) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  %dlogits = nn.cross_entropy_grad %logits, %labels, %dloss : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  return
}

// bf16 activations and weights are accepted as well.
// CHECK-LABEL: func @bf16
func.func @bf16(%x: tensor<2x4x8xbf16>, %w: tensor<24x8xbf16>) -> tensor<2x4x24xbf16> {
  // CHECK: nn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xbf16>, tensor<24x8xbf16>) -> tensor<2x4x24xbf16>
  %y = nn.linear %x, %w : (tensor<2x4x8xbf16>, tensor<24x8xbf16>) -> tensor<2x4x24xbf16>
  return %y : tensor<2x4x24xbf16>
}

// One LLaMA block, hidden 8, 2 query heads sharing 1 key/value head (head
// dimension 4): embedding without positions, RMSNorm, rotary on the fused
// q/k/v [q (8) | k (4) | v (4)], grouped-query attention, SwiGLU MLP, an
// output projection with its own weight.
// CHECK-LABEL: func @llama_block
func.func @llama_block(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>,
                       %wte: tensor<16x8xf32>, %g: tensor<8xf32>,
                       %wqkv: tensor<16x8xf32>, %wgate: tensor<12x8xf32>,
                       %wup: tensor<12x8xf32>, %wdown: tensor<8x12xf32>,
                       %whead: tensor<16x8xf32>) -> tensor<f32> {
  // CHECK: %[[X:.*]] = nn.embedding %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %x = nn.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[N:.*]] = nn.rms_norm %[[X]], %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %n = nn.rms_norm %x, %g {epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.rms_norm %[[X]], %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %n2 = nn.rms_norm %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[QKV:.*]] = nn.linear %[[N]], %{{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %qkv = nn.linear %n, %wqkv : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: %[[ROT:.*]] = nn.rotary %[[QKV]] heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %rot = nn.rotary %qkv heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  // CHECK: nn.rotary %[[QKV]] heads(2) kv_heads(1) {base = 5.000000e+05 : f32}
  %rot3 = nn.rotary %qkv heads(2) kv_heads(1) {base = 500000.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  // CHECK: %[[A:.*]] = nn.attention %[[ROT]] heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  %a = nn.attention %rot heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m = nn.rms_norm %r, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %gate = nn.linear %m, %wgate : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %up = nn.linear %m, %wup : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  // CHECK: %[[S:.*]] = nn.swiglu %{{.*}}, %{{.*}} : (tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  %s = nn.swiglu %gate, %up : (tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  %down = nn.linear %s, %wdown : (tensor<2x4x12xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
  // Untied output projection: the existing linear op with its own weight.
  // CHECK: nn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %logits = nn.linear %down, %whead : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func @llama_backward_ops
func.func @llama_backward_ops(%tokens: tensor<2x4xi32>, %x: tensor<2x4x8xf32>,
                              %dy: tensor<2x4x8xf32>, %g: tensor<8xf32>,
                              %qkv: tensor<2x4x16xf32>, %h: tensor<2x4x12xf32>) {
  // CHECK: nn.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %dwte = nn.embedding_grad %tokens, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  // CHECK: nn.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %dx, %dg = nn.rms_norm_grad %x, %g, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}} heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  %dqkv = nn.attention_grad %qkv, %dy heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: nn.rotary_grad %{{.*}} heads(2) kv_heads(1) {base = 5.000000e+05 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %drot = nn.rotary_grad %dqkv heads(2) kv_heads(1) {base = 500000.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  // CHECK: nn.swiglu_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x12xf32>, tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> (tensor<2x4x12xf32>, tensor<2x4x12xf32>)
  %dgate, %dup = nn.swiglu_grad %h, %h, %h : (tensor<2x4x12xf32>, tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> (tensor<2x4x12xf32>, tensor<2x4x12xf32>)
  return
}

// The backward of a with_stats attention reads its output and log-sum-exps.
// CHECK-LABEL: func.func @attention_saved(
// CHECK: nn.attention_grad %{{.*}}, %{{.*}} saved(%{{.*}}, %{{.*}}) heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4xf32>) -> tensor<2x4x24xf32>
func.func @attention_saved(%qkv: tensor<2x4x24xf32>, %dy: tensor<2x4x8xf32>, %out: tensor<2x4x8xf32>, %lse: tensor<2x2x4xf32>) -> tensor<2x4x24xf32> {
  %d = nn.attention_grad %qkv, %dy saved(%out, %lse) heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4xf32>) -> tensor<2x4x24xf32>
  return %d : tensor<2x4x24xf32>
}

// The norms' with_stats forms return each row's statistics, and their
// backward ops take them as trailing operands.
// CHECK-LABEL: func.func @norm_stats(
// CHECK: %{{.*}}, %[[ST:.*]]:2 = nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} with_stats : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[ST]]#0, %[[ST]]#1 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: %{{.*}}, %[[R:.*]] = nn.rms_norm %{{.*}}, %{{.*}} with_stats {epsilon = 9.99999997E-7 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
// CHECK: nn.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[R]] {epsilon = 9.99999997E-7 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
func.func @norm_stats(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %dy: tensor<2x4x8xf32>) {
  %y, %mean, %rstd = nn.layer_norm %x, %g, %b with_stats : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy, %mean, %rstd : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %z, %r = nn.rms_norm %x, %g with_stats {epsilon = 1.0e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  %dz, %dgz = nn.rms_norm_grad %x, %g, %dy, %r {epsilon = 1.0e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

// Cross-entropy's with_stats form returns each row's max and log-sum (0 for
// an ignored row), and its backward takes them after the loss gradient.
// CHECK-LABEL: func.func @loss_stats(
// CHECK: %{{.*}}, %[[ST:.*]]:2 = nn.cross_entropy %{{.*}}, %{{.*}} with_stats : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[ST]]#0, %[[ST]]#1 : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4x16xf32>
func.func @loss_stats(%logits: tensor<2x4x16xf32>, %lab: tensor<2x4xi32>, %one: tensor<f32>) -> tensor<2x4x16xf32> {
  %loss, %max, %sum = nn.cross_entropy %logits, %lab with_stats : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %d = nn.cross_entropy_grad %logits, %lab, %one, %max, %sum : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4x16xf32>
  return %d : tensor<2x4x16xf32>
}

