// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics

func.func @probability_one(%x: tensor<2x4x8xf32>, %key: tensor<4xi32>) {
  // expected-error @+1 {{#nn.dropout expected a probability in [0, 1) (also as an f32), got 1}}
  %y = nn.dropout %x, %key {dropout = #nn.dropout<1.0, site = 0>}
      : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @probability_zero(%x: tensor<2x4x8xf32>, %key: tensor<4xi32>) {
  // expected-error @+1 {{#nn.dropout expects a probability above 0 (a site that drops nothing is no op at all)}}
  %y = nn.dropout %x, %key {dropout = #nn.dropout<0.0, site = 0>}
      : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @site_too_large(%x: tensor<2x4x8xf32>, %key: tensor<4xi32>) {
  // expected-error @+1 {{#nn.dropout expects a site in [0, 16777216), got 16777216}}
  %y = nn.dropout %x, %key {dropout = #nn.dropout<0.1, site = 16777216>}
      : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @key_shape(%x: tensor<2x4x8xf32>, %key: tensor<2xi32>) {
  // expected-error @+1 {{'nn.dropout' op expects a dropout key of type tensor<4xi32>, got 'tensor<2xi32>'}}
  %y = nn.dropout %x, %key {dropout = #nn.dropout<0.1, site = 0>}
      : (tensor<2x4x8xf32>, tensor<2xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @result_type(%x: tensor<2x4x8xf32>, %key: tensor<4xi32>) {
  // expected-error @+1 {{'nn.dropout' op expects result type 'tensor<2x4x8xf32>' (inferred from the operands), got 'tensor<2x4x4xf32>'}}
  %y = nn.dropout %x, %key {dropout = #nn.dropout<0.1, site = 0>}
      : (tensor<2x4x8xf32>, tensor<4xi32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @grouped_attention(%qkv: tensor<2x4x16xf32>, %key: tensor<4xi32>) {
  // expected-error @+1 {{'nn.attention' op drops attention probabilities only without grouping (kv_heads 1 of 2 heads)}}
  %a = nn.attention %qkv heads(2) kv_heads(1) causal
      dropout(%key, #nn.dropout<0.1, site = 1>)
      : (tensor<2x4x16xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_key_without_dropout(%qkv: tensor<2x4x24xf32>, %key: tensor<4xi32>) {
  // expected-error @+1 {{'nn.attention' op expects a dropout key and a #nn.dropout together, got only the key}}
  %a = "nn.attention"(%qkv, %key) {num_heads = 2 : i64}
      : (tensor<2x4x24xf32>, tensor<4xi32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_grad_key(%qkv: tensor<2x4x24xf32>, %dy: tensor<2x4x8xf32>, %key: tensor<3xi32>) {
  // expected-error @+1 {{'nn.attention_grad' op expects a dropout key of type tensor<4xi32>, got 'tensor<3xi32>'}}
  %d = nn.attention_grad %qkv, %dy heads(2)
      dropout(%key, #nn.dropout<0.1, site = 1>)
      : (tensor<2x4x24xf32>, tensor<2x4x8xf32>, tensor<3xi32>) -> tensor<2x4x24xf32>
  return
}
