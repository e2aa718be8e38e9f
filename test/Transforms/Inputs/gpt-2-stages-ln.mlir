// gpt-2-stages.mlir with a layer norm closing stage 0: an op with
// statistics, so that the recomputation modes differ in what stage 0 keeps
// (input of bitpipe-simulate-recompute.mlir).
module {
  func.func @gpt_stage0(%tok: tensor<2x4xi32> {nn.input = "tokens"},
                        %wte: tensor<16x8xf32> {nn.param = "wte"},
                        %wpe: tensor<4x8xf32> {nn.param = "wpe"},
                        %g: tensor<8xf32> {nn.param = "ln.weight"},
                        %b: tensor<8xf32> {nn.param = "ln.bias"})
      -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64} {
    %x = nn.embedding %tok, %wte, %wpe {nn.layer = 0} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %y = nn.layer_norm %x, %g, %b {nn.layer = 0} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func @gpt_stage1(%x: tensor<2x4x8xf32>, %wte: tensor<16x8xf32> {nn.param = "wte"},
                        %lab: tensor<2x4xi32> {nn.input = "labels"})
      -> tensor<f32> attributes {bitpipe.stage = 1 : i64} {
    %logits = nn.linear %x, %wte {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = nn.cross_entropy %logits, %lab {nn.layer = 1} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
