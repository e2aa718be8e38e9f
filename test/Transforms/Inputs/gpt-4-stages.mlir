// A tiny GPT cut into 4 stages (input of the bitpipe-place/schedule/simulate tests).
// Stage functions as bitpipe-partition writes them: stage 0 reads the
// tokens, the last stage the labels and returns the loss; parameters are
// `nn.param` arguments (the tied embedding `wte` on both ends).
module {
  func.func @gpt_stage0(%tok: tensor<2x4xi32> {nn.input = "tokens"},
                        %wte: tensor<16x8xf32> {nn.param = "wte"},
                        %wpe: tensor<4x8xf32> {nn.param = "wpe"})
      -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64} {
    %x = nn.embedding %tok, %wte, %wpe {nn.layer = 0} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    return %x : tensor<2x4x8xf32>
  }
  func.func @gpt_stage1(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32> {nn.param = "h1.w"})
      -> tensor<2x4x8xf32> attributes {bitpipe.stage = 1 : i64} {
    %y = nn.linear %x, %w {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func @gpt_stage2(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32> {nn.param = "h2.w"})
      -> tensor<2x4x8xf32> attributes {bitpipe.stage = 2 : i64} {
    %y = nn.linear %x, %w {nn.layer = 2} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func @gpt_stage3(%x: tensor<2x4x8xf32>, %wte: tensor<16x8xf32> {nn.param = "wte"},
                        %lab: tensor<2x4xi32> {nn.input = "labels"})
      -> tensor<f32> attributes {bitpipe.stage = 3 : i64} {
    %logits = nn.linear %x, %wte {nn.layer = 3} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = nn.cross_entropy %logits, %lab {nn.layer = 3} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
