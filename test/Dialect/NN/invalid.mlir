// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics

func.func @embedding_tokens_rank(%t: tensor<8xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.embedding' op expects tokens of rank 2 [batch, seq], got 'tensor<8xi32>'}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<8xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @embedding_wte_rank(%t: tensor<2x4xi32>, %wte: tensor<16xf32>, %wpe: tensor<4x8xf32>) {
  // expected-error @+1 {{expects wte of rank 2 [vocab, hidden], got 'tensor<16xf32>'}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @embedding_wpe_rank(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8x1xf32>) {
  // expected-error @+1 {{expects wpe of rank 2 [max_positions, hidden], got 'tensor<4x8x1xf32>'}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8x1xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @embedding_element_types(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xbf16>) {
  // expected-error @+1 {{expects wpe to have element type 'f32' (as wte), got 'bf16'}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xbf16>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @embedding_hidden(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x6xf32>) {
  // expected-error @+1 {{expects wpe's hidden size 6 to equal wte's 8}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x6xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @embedding_too_long(%t: tensor<2x5xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  // expected-error @+1 {{sequence length 5 exceeds the position table's 4 rows}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x5xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @embedding_token_type(%t: tensor<2x4xf32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xf32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @result_type_mismatch(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.embedding' op expects result type 'tensor<2x4x8xf32>' (inferred from the operands), got 'tensor<2x4x9xf32>'}}
  %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x9xf32>
  return
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects an input of rank >= 1, got 'tensor<f32>'}}
  %y = nn.layer_norm %x, %g, %g : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<2x8xf32>, %g: tensor<6xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects gamma of shape [8] (the input's last dimension), got 'tensor<6xf32>'}}
  %y = nn.layer_norm %x, %g, %b : (tensor<2x8xf32>, tensor<6xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_beta(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{expects beta of shape [8] (the input's last dimension), got 'tensor<2x8xf32>'}}
  %y = nn.layer_norm %x, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_element_type(%x: tensor<2x8xbf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{expects gamma to have element type 'bf16' (as input), got 'f32'}}
  %y = nn.layer_norm %x, %g, %g : (tensor<2x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xbf16>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'nn.linear' op expects weight of rank 2 [out, in], got 'tensor<8xf32>'}}
  %y = nn.linear %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<2x8xf32>, %w: tensor<16x6xf32>) {
  // expected-error @+1 {{'nn.linear' op expects weight of shape [out, 8] (in = the input's last dimension), got 'tensor<16x6xf32>'}}
  %y = nn.linear %x, %w : (tensor<2x8xf32>, tensor<16x6xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'nn.linear' op expects bias of shape [16] (the weight's out dimension), got 'tensor<8xf32>'}}
  %y = nn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @linear_scalar(%x: tensor<f32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'nn.linear' op expects an input of rank >= 1, got 'tensor<f32>'}}
  %y = nn.linear %x, %w : (tensor<f32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @linear_element_type(%x: tensor<2x8xf32>, %w: tensor<16x8xbf16>) {
  // expected-error @+1 {{'nn.linear' op expects weight to have element type 'f32' (as input), got 'bf16'}}
  %y = nn.linear %x, %w : (tensor<2x8xf32>, tensor<16x8xbf16>) -> tensor<2x16xf32>
  return
}

// -----

func.func @attention_rank(%qkv: tensor<4x24xf32>) {
  // expected-error @+1 {{'nn.attention' op expects qkv of rank 3 [batch, seq, 3 * hidden], got 'tensor<4x24xf32>'}}
  %a = nn.attention %qkv heads(2) : (tensor<4x24xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_not_fused(%qkv: tensor<2x4x20xf32>) {
  // expected-error @+1 {{'nn.attention' op expects the last dimension of qkv (20) to be 3 * hidden}}
  %a = nn.attention %qkv heads(2) : (tensor<2x4x20xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_heads(%qkv: tensor<2x4x24xf32>) {
  // expected-error @+1 {{'nn.attention' op expects hidden size 8 to be a multiple of num_heads (3)}}
  %a = nn.attention %qkv heads(3) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_zero_heads(%qkv: tensor<2x4x24xf32>) {
  // expected-error @+1 {{attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %a = nn.attention %qkv heads(0) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_stats_type(%qkv: tensor<2x4x24xf32>) {
  // expected-error @+1 {{'nn.attention' op expects lse of type 'tensor<2x2x4xf32>' ([B, num_heads, T] f32), got 'tensor<2x4x2xf32>'}}
  %a, %l = nn.attention %qkv heads(2) with_stats : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x2xf32>)
  return
}

// -----

func.func @attention_stats_missing(%qkv: tensor<2x4x24xf32>) {
  // expected-error @+1 {{'nn.attention' op with 'with_stats' expects a second result, the log-sum-exps}}
  %a = nn.attention %qkv heads(2) with_stats : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_grad_saved_lse(%qkv: tensor<2x4x24xf32>, %g: tensor<2x4x8xf32>, %out: tensor<2x4x8xf32>, %lse: tensor<2x4x2xf32>) {
  // expected-error @+1 {{'nn.attention_grad' op expects lse of type 'tensor<2x2x4xf32>' ([B, num_heads, T] f32), got 'tensor<2x4x2xf32>'}}
  %d = nn.attention_grad %qkv, %g saved(%out, %lse) heads(2) : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x2xf32>) -> tensor<2x4x24xf32>
  return
}

// -----

func.func @attention_dynamic(%qkv: tensor<2x4x?xf32>) {
  // expected-error @+1 {{'nn.attention' op expects a static fused q/k/v dimension, got 'tensor<2x4x?xf32>'}}
  %a = nn.attention %qkv heads(2) : (tensor<2x4x?xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @add_types(%a: tensor<2x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'nn.add' op expects operands of one type (no broadcasting), got 'tensor<2x8xf32>' and 'tensor<1x8xf32>'}}
  %y = nn.add %a, %b : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @cross_entropy_rank(%l: tensor<16xf32>, %y: tensor<i32>) {
  // expected-error @+1 {{'nn.cross_entropy' op expects logits of rank >= 2 [..., vocab], got 'tensor<16xf32>'}}
  %loss = nn.cross_entropy %l, %y : (tensor<16xf32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<2x4x16xf32>, %y: tensor<2x5xi32>) {
  // expected-error @+1 {{'nn.cross_entropy' op expects labels shaped as the logits without their last (vocab) dimension, got logits 'tensor<2x4x16xf32>' and labels 'tensor<2x5xi32>'}}
  %loss = nn.cross_entropy %l, %y : (tensor<2x4x16xf32>, tensor<2x5xi32>) -> tensor<f32>
  return
}

// -----

func.func @embedding_grad(%t: tensor<2x4xi32>, %dy: tensor<2x4x6xf32>) {
  // expected-error @+1 {{'nn.embedding_grad' op expects grad of type 'tensor<2x4x8xf32>' (the embedding's output), got 'tensor<2x4x6xf32>'}}
  %a, %b = nn.embedding_grad %t, %dy : (tensor<2x4xi32>, tensor<2x4x6xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @layer_norm_grad(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op expects beta_grad of type 'tensor<8xf32>' (as gamma), got 'tensor<2x8xf32>'}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @linear_input_grad(%dy: tensor<2x16xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{'nn.linear_input_grad' op expects weight of shape [out, 6] (in = the input's last dimension), got 'tensor<16x8xf32>'}}
  %dx = nn.linear_input_grad %dy, %w : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @linear_weight_grad(%x: tensor<2x8xf32>, %dy: tensor<2x12xf32>) {
  // expected-error @+1 {{'nn.linear_weight_grad' op expects grad of type 'tensor<2x16xf32>' (the linear op's output), got 'tensor<2x12xf32>'}}
  %dw = nn.linear_weight_grad %x, %dy : (tensor<2x8xf32>, tensor<2x12xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @attention_grad(%qkv: tensor<2x4x24xf32>, %dy: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'nn.attention_grad' op expects qkv_grad of type 'tensor<2x4x24xf32>' (as qkv), got 'tensor<2x4x8xf32>'}}
  %d = nn.attention_grad %qkv, %dy heads(2) : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @gelu_form(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{custom op 'nn.gelu' expected string or keyword containing one of the following enum values for attribute 'form' [tanh, erf]}}
  %y = nn.gelu %x form(sigmoid) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @gelu_grad(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.gelu_grad' op expects grad of type 'tensor<2x8xf32>' (as the input), got 'tensor<2x4xf32>'}}
  %d = nn.gelu_grad %x, %dy : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @cross_entropy_grad(%l: tensor<2x16xf32>, %y: tensor<2xi32>, %dl: tensor<f32>) {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expects logits_grad of type 'tensor<2x16xf32>' (as the logits), got 'tensor<2x8xf32>'}}
  %d = nn.cross_entropy_grad %l, %y, %dl : (tensor<2x16xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x8xf32>
  return
}

// -----

// The layer-norm epsilon is finite and in (0, 1) (ModelLimits.h), as the
// importer requires of a config.
func.func @layer_norm_epsilon_nan(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects 'epsilon' expected a finite number in (0, 1) (also as an f32), got nan}}
  %y = nn.layer_norm %x, %g, %g {epsilon = 0x7FC00000 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon_inf(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects 'epsilon' expected a finite number in (0, 1) (also as an f32), got inf}}
  %y = nn.layer_norm %x, %g, %g {epsilon = 0x7F800000 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon_negative(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects 'epsilon' expected a finite number in (0, 1) (also as an f32), got -1}}
  %y = nn.layer_norm %x, %g, %g {epsilon = -1.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon_zero(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects 'epsilon' expected a finite number in (0, 1) (also as an f32), got 0}}
  %y = nn.layer_norm %x, %g, %g {epsilon = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_grad_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op expects 'epsilon' expected a finite number in (0, 1) (also as an f32), got 2}}
  %a, %b, %c = nn.layer_norm_grad %x, %g, %x {epsilon = 2.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Shapes whose element (or byte) count leaves int64: refused before the
// shape functions or the cost model multiply them.
func.func @elements_overflow(%x: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{'nn.gelu' op operand #0 of type 'tensor<4294967296x4294967296xf32>' has more elements or bytes than 2^63-1 (9223372036854775807)}}
  %y = nn.gelu %x : (tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  return
}

// -----

func.func @bytes_overflow(%x: tensor<2147483648x2147483648xf32>, %w: tensor<2147483648x2147483648xf32>) {
  // expected-error @+1 {{'nn.add' op operand #0 of type 'tensor<2147483648x2147483648xf32>' has more elements or bytes than 2^63-1 (9223372036854775807)}}
  %y = nn.add %x, %w : (tensor<2147483648x2147483648xf32>, tensor<2147483648x2147483648xf32>) -> tensor<2147483648x2147483648xf32>
  return
}

// -----

func.func @rms_norm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'nn.rms_norm' op expects gamma of shape [8] (the input's last dimension), got 'tensor<4xf32>'}}
  %y = nn.rms_norm %x, %g : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.rms_norm' op expects 'epsilon' expected a finite number in (0, 1) (also as an f32), got 0}}
  %y = nn.rms_norm %x, %g {epsilon = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_grad(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'nn.rms_norm_grad' op expects gamma_grad of type 'tensor<8xf32>' (as gamma), got 'tensor<2x8xf32>'}}
  %a, %b = nn.rms_norm_grad %x, %g, %x : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @swiglu_types(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.swiglu' op expects gate and up of one type, got 'tensor<2x8xf32>' and 'tensor<2x4xf32>'}}
  %y = nn.swiglu %a, %b : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @swiglu_grad(%a: tensor<2x8xf32>, %d: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.swiglu_grad' op expects grad of type 'tensor<2x8xf32>' (as gate), got 'tensor<2x4xf32>'}}
  %x, %y = nn.swiglu_grad %a, %a, %d : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @gqa_kv_heads_divide(%qkv: tensor<2x4x28xf32>) {
  // expected-error @+1 {{'nn.attention' op expects num_kv_heads (2) to divide num_heads (3)}}
  %a = nn.attention %qkv heads(3) kv_heads(2) : (tensor<2x4x28xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @gqa_width(%qkv: tensor<2x4x18xf32>) {
  // expected-error @+1 {{'nn.attention' op expects the last dimension of qkv (18) to be (num_heads + 2 * num_kv_heads) * head_dim = 4 * head_dim}}
  %a = nn.attention %qkv heads(2) kv_heads(1) : (tensor<2x4x18xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @gqa_result(%qkv: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'nn.attention' op expects result type 'tensor<2x4x8xf32>' (inferred from the operands), got 'tensor<2x4x4xf32>'}}
  %a = nn.attention %qkv heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @gqa_zero_kv_heads(%qkv: tensor<2x4x16xf32>) {
  // expected-error @+1 {{attribute 'num_kv_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %a = nn.attention %qkv heads(2) kv_heads(0) : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @rotary_odd_head_dim(%qkv: tensor<2x4x12xf32>) {
  // expected-error @+1 {{'nn.rotary' op expects an even head dimension (rotary rotates pairs of features), got 3}}
  %r = nn.rotary %qkv heads(2) kv_heads(1) : (tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  return
}

// -----

func.func @rotary_base(%qkv: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'nn.rotary' op expects 'base' (rope_theta) to be a positive finite number, got -1}}
  %r = nn.rotary %qkv heads(2) kv_heads(1) {base = -1.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @rotary_result(%qkv: tensor<2x4x24xf32>) {
  // expected-error @+1 {{'nn.rotary' op expects result type 'tensor<2x4x24xf32>' (inferred from the operands), got 'tensor<2x4x8xf32>'}}
  %r = nn.rotary %qkv heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @rotary_grad(%d: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'nn.rotary_grad' op expects qkv_grad of type 'tensor<2x4x16xf32>' (as grad), got 'tensor<2x4x8xf32>'}}
  %r = nn.rotary_grad %d heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @gqa_grad(%qkv: tensor<2x4x16xf32>, %dy: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'nn.attention_grad' op expects grad of type 'tensor<2x4x8xf32>' (the attention's output), got 'tensor<2x4x16xf32>'}}
  %d = nn.attention_grad %qkv, %dy heads(2) kv_heads(1) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @layer_norm_stats_missing(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op with 'with_stats' expects its statistics (mean, rstd) as results}}
  %y = nn.layer_norm %x, %g, %b with_stats : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @cross_entropy_stats_missing(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>) {
  // expected-error @+1 {{'nn.cross_entropy' op with 'with_stats' expects its statistics (row max, log-sum) as results}}
  %loss = nn.cross_entropy %l, %y with_stats : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_stat_type(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>, %one: tensor<f32>, %m: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expects statistics of type 'tensor<2x4xf32>' (row max, log-sum, one f32 per row of the input), got 'tensor<2x4x16xf32>'}}
  %d = nn.cross_entropy_grad %l, %y, %one, %m, %m : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @layer_norm_grad_one_stat(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x4x8xf32>, %mean: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op expects 2 statistics (mean, rstd) or none, got 1}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy, %mean : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_stat_type(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x4x8xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'nn.rms_norm_grad' op expects statistics of type 'tensor<2x4xf32>' (rstd, one f32 per row of the input), got 'tensor<8xf32>'}}
  %dx, %dg = nn.rms_norm_grad %x, %g, %dy, %r : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return
}

