func.func @gpt_block(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>,
                     %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>,
                     %g: tensor<8xf32>, %b: tensor<8xf32>,
                     %wqkv: tensor<24x8xf32>, %bqkv: tensor<24xf32>,
                     %wfc: tensor<32x8xf32>, %wproj: tensor<8x32xf32>) -> tensor<f32> {
  %x = nn.embedding %tokens, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %ln = nn.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %ln2 = nn.layer_norm %x, %g, %b {epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = nn.linear %ln, %wqkv, %bqkv : (tensor<2x4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  %a = nn.attention %qkv heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %bi = nn.attention %qkv heads(2) : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h = nn.linear %r, %wfc : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %ge = nn.gelu %h : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %gerf = nn.gelu %h form(erf) : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %p = nn.linear %ge, %wproj : (tensor<2x4x32xf32>, tensor<8x32xf32>) -> tensor<2x4x8xf32>
  %logits = nn.linear %p, %wte : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %loss0 = nn.cross_entropy %logits, %labels {ignore_index = 0} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

func.func @backward_ops(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>,
                        %x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>,
                        %g: tensor<8xf32>, %w: tensor<24x8xf32>,
                        %qkv: tensor<2x4x24xf32>, %dqkvout: tensor<2x4x24xf32>,
                        %logits: tensor<2x4x16xf32>, %dloss: tensor<f32>) {
  %dwte, %dwpe = nn.embedding_grad %tokens, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>)
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dlin = nn.linear_input_grad %dqkvout, %w : (tensor<2x4x24xf32>, tensor<24x8xf32>) -> tensor<2x4x8xf32>
  %dw, %dbias = nn.linear_weight_grad %x, %dqkvout : (tensor<2x4x8xf32>, tensor<2x4x24xf32>) -> (tensor<24x8xf32>, tensor<24xf32>)
  %dwonly = nn.linear_weight_grad %x, %dqkvout : (tensor<2x4x8xf32>, tensor<2x4x24xf32>) -> tensor<24x8xf32>
  %dqkv = nn.attention_grad %qkv, %dy heads(2) causal : (tensor<2x4x24xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %dge = nn.gelu_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dgerf = nn.gelu_grad %x, %dy form(erf) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dgtanh = nn.gelu_grad %x, %dy form(tanh) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dlogits = nn.cross_entropy_grad %logits, %labels, %dloss : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  return
}

func.func @bf16(%x: tensor<2x4x8xbf16>, %w: tensor<24x8xbf16>) -> tensor<2x4x24xbf16> {
  %y = nn.linear %x, %w : (tensor<2x4x8xbf16>, tensor<24x8xbf16>) -> tensor<2x4x24xbf16>
  return %y : tensor<2x4x24xbf16>
}

func.func @llama_block(%tokens: tensor<2x4xi32>, %labels: tensor<2x4xi32>,
                       %wte: tensor<16x8xf32>, %g: tensor<8xf32>,
                       %wqkv: tensor<16x8xf32>, %wgate: tensor<12x8xf32>,
                       %wup: tensor<12x8xf32>, %wdown: tensor<8x12xf32>,
                       %whead: tensor<16x8xf32>) -> tensor<f32> {
  %x = nn.embedding %tokens, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %n = nn.rms_norm %x, %g {epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %n2 = nn.rms_norm %x, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = nn.linear %n, %wqkv : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %rot = nn.rotary %qkv heads(2) kv_heads(1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %rot3 = nn.rotary %qkv heads(2) kv_heads(1) {base = 500000.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %a = nn.attention %rot heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m = nn.rms_norm %r, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %gate = nn.linear %m, %wgate : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %up = nn.linear %m, %wup : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %s = nn.swiglu %gate, %up : (tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  %down = nn.linear %s, %wdown : (tensor<2x4x12xf32>, tensor<8x12xf32>) -> tensor<2x4x8xf32>
  %logits = nn.linear %down, %whead : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

func.func @llama_backward_ops(%tokens: tensor<2x4xi32>, %x: tensor<2x4x8xf32>,
                              %dy: tensor<2x4x8xf32>, %g: tensor<8xf32>,
                              %qkv: tensor<2x4x16xf32>, %h: tensor<2x4x12xf32>) {
  %dwte = nn.embedding_grad %tokens, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %dx, %dg = nn.rms_norm_grad %x, %g, %dy : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %dqkv = nn.attention_grad %qkv, %dy heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  %drot = nn.rotary_grad %dqkv heads(2) kv_heads(1) {base = 500000.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %dgate, %dup = nn.swiglu_grad %h, %h, %h : (tensor<2x4x12xf32>, tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> (tensor<2x4x12xf32>, tensor<2x4x12xf32>)
  return
}
