// RUN: bitpipe-opt %s --bitpipe-partition=chunks=2 | FileCheck %s --check-prefix=TWO
// RUN: bitpipe-opt %s --bitpipe-partition=chunks=3 | bitpipe-opt | FileCheck %s --check-prefix=THREE
// RUN: bitpipe-opt %s --bitpipe-partition=boundaries=2,3 | FileCheck %s --check-prefix=CUT
// RUN: bitpipe-opt %s --bitpipe-partition="chunks=5 print" -o /dev/null | FileCheck %s --check-prefix=PRINT

// A five-layer toy with uneven layers. B = 2, T = 4 (M = 8 positions),
// H = 8, V = 16; x = [2, 4, 8] has n = 64 elements. Cost of a layer =
// forward + backward FLOPs (bitpipe-annotate-cost's numbers):
//   layer 0 embedding      64 + 128                           =  192
//   layer 1 gelu, add      (8n + 16n) + (n + 0)               = 1600
//   layer 2 linear, add    (2*8*8*8 + 4*8*8*8) + (n + 0)      = 3136
//   layer 3 gelu, add                                         = 1600
//   layer 4 head: linear to V with the tied wte 6*8*8*16 = 6144,
//               cross_entropy 4*8*16 + 2*8*16 = 768           = 6912
//   total                                                     = 13440
// The head alone costs 6912, so no cut does better than 6912.
//
// chunks=2: prefix sums 192, 1792, 4928, 6528 | 13440. Cutting before
//   layer 4 gives 6528 | 6912, the optimum; any earlier cut leaves the
//   second chunk at 8512 or more. Four layers against one.
// chunks=3: 6912 is still reachable, in two ways: {0} {1-3} {4}
//   (192, 6336, 6912) and {0-1} {2-3} {4} (1792, 4736, 6912). Among cuts
//   reaching the optimum the one with the smallest second-largest chunk
//   (then third, ...) wins: 4736 < 6336, so {0-1} {2-3} {4}. The earliest
//   boundaries would have left the embedding alone and 6336 in the middle.
// boundaries=2,3: the user's cut {0-1} {2} {3-4} = 1792, 3136, 8512;
//   balance = 8512 / (13440 / 3) = 1.9.
//
// Layer 3 adds the embedding output %x (a long skip connection), so with
// boundaries=2,3 a value crosses two boundaries: stage 0 returns it and the
// model passes it to stage 2 directly.

func.func @toy(%wte: tensor<16x8xf32> {nn.param = "wte"},
               %wpe: tensor<4x8xf32> {nn.param = "wpe"},
               %w: tensor<8x8xf32> {nn.param = "w"},
               %tok: tensor<2x4xi32> {nn.input = "tokens"},
               %lab: tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32>
    attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  %x = nn.embedding %tok, %wte, %wpe {nn.layer = 0} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %g1 = nn.gelu %x {nn.layer = 1} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s1 = nn.add %x, %g1 {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = nn.linear %s1, %w {nn.layer = 2} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s2 = nn.add %s1, %y {nn.layer = 2} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %g3 = nn.gelu %s2 {nn.layer = 3} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s3 = nn.add %x, %g3 {nn.layer = 3} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = nn.linear %s3, %wte {nn.layer = 4} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %lab {nn.layer = 4} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// TWO: module attributes {bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 4], costs = [6528, 6912], balance = {{.*}}>}
// TWO-LABEL: func.func @toy_stage0(
// TWO-SAME:    -> tensor<2x4x8xf32> attributes {bitpipe.layers = array<i64: 0, 3>, bitpipe.stage = 0 : i64}
// TWO-COUNT-7: = nn.
// TWO-NOT:     = nn.
// TWO:         return
// TWO-LABEL: func.func @toy_stage1(
// TWO-SAME:    -> tensor<f32> attributes {bitpipe.layers = array<i64: 4, 4>, bitpipe.stage = 1 : i64}
// TWO-LABEL: func.func @toy(
// TWO-COUNT-2: call @toy_stage

// THREE: module attributes {bitpipe.partition = #bitpipe.partition<chunks = 3, starts = [0, 2, 4], costs = [1792, 4736, 6912], balance = {{.*}}>}

// The tied embedding %wte is an argument of the first and the last stage.
// Layer 3 reads the embedding output %x, so stage 0 returns it beside the
// stream.
// THREE-LABEL: func.func @toy_stage0(
// THREE-SAME:    %[[WTE:[^:]+]]: tensor<16x8xf32> {nn.param = "wte"}, %[[WPE:[^:]+]]: tensor<4x8xf32> {nn.param = "wpe"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {nn.input = "tokens"})
// THREE-SAME:    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) attributes {bitpipe.layers = array<i64: 0, 1>, bitpipe.stage = 0 : i64}
// THREE-NEXT:    %[[X:.*]] = nn.embedding %[[TOK]], %[[WTE]], %[[WPE]] {nn.layer = 0 : i64}
// THREE-NEXT:    %[[G1:.*]] = nn.gelu %[[X]] {nn.layer = 1 : i64}
// THREE-NEXT:    %[[S1:.*]] = nn.add %[[X]], %[[G1]] {nn.layer = 1 : i64}
// THREE-NEXT:    return %[[X]], %[[S1]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>

// Values that flow in come first, in the model's order, then the parameters
// this chunk uses.
// THREE-LABEL: func.func @toy_stage1(
// THREE-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>, %[[S1:[^:]+]]: tensor<2x4x8xf32>, %[[W:[^:]+]]: tensor<8x8xf32> {nn.param = "w"})
// THREE-SAME:    -> tensor<2x4x8xf32> attributes {bitpipe.layers = array<i64: 2, 3>, bitpipe.stage = 1 : i64}
// THREE-NEXT:    %[[Y:.*]] = nn.linear %[[S1]], %[[W]] {nn.layer = 2 : i64}
// THREE-NEXT:    %[[S2:.*]] = nn.add %[[S1]], %[[Y]] {nn.layer = 2 : i64}
// THREE-NEXT:    %[[G3:.*]] = nn.gelu %[[S2]] {nn.layer = 3 : i64}
// THREE-NEXT:    %[[S3:.*]] = nn.add %[[X]], %[[G3]] {nn.layer = 3 : i64}
// THREE-NEXT:    return %[[S3]] : tensor<2x4x8xf32>

// THREE-LABEL: func.func @toy_stage2(
// THREE-SAME:    %[[H:[^:]+]]: tensor<2x4x8xf32>, %[[WTE:[^:]+]]: tensor<16x8xf32> {nn.param = "wte"}, %[[LAB:[^:]+]]: tensor<2x4xi32> {nn.input = "labels"})
// THREE-SAME:    -> tensor<f32> attributes {bitpipe.layers = array<i64: 4, 4>, bitpipe.stage = 2 : i64}
// THREE-NEXT:    %[[LOGITS:.*]] = nn.linear %[[H]], %[[WTE]] {nn.layer = 4 : i64}
// THREE-NEXT:    %[[LOSS:.*]] = nn.cross_entropy %[[LOGITS]], %[[LAB]] {nn.layer = 4 : i64}
// THREE-NEXT:    return %[[LOSS]] : tensor<f32>

// The model keeps its signature and chains the stages.
// THREE-LABEL: func.func @toy(
// THREE-SAME:    %[[WTE:[^:]+]]: tensor<16x8xf32> {nn.param = "wte"}, %[[WPE:[^:]+]]: tensor<4x8xf32> {nn.param = "wpe"}, %[[W:[^:]+]]: tensor<8x8xf32> {nn.param = "w"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {nn.input = "tokens"}, %[[LAB:[^:]+]]: tensor<2x4xi32> {nn.input = "labels"})
// THREE-SAME:    attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>}
// THREE-NEXT:    %[[S0:.*]]:2 = call @toy_stage0(%[[WTE]], %[[WPE]], %[[TOK]]) : (tensor<16x8xf32>, tensor<4x8xf32>, tensor<2x4xi32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
// THREE-NEXT:    %[[H:.*]] = call @toy_stage1(%[[S0]]#0, %[[S0]]#1, %[[W]]) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// THREE-NEXT:    %[[LOSS:.*]] = call @toy_stage2(%[[H]], %[[WTE]], %[[LAB]]) : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<f32>
// THREE-NEXT:    return %[[LOSS]] : tensor<f32>
// THREE-NEXT:  }

// CUT: module attributes {bitpipe.partition = #bitpipe.partition<chunks = 3, starts = [0, 2, 3], costs = [1792, 3136, 8512], balance = 1.8999999999999999>}

// Stage 0 returns both the embedding output (for layer 3) and the stream.
// CUT-LABEL: func.func @toy_stage0(
// CUT-SAME:    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) attributes {bitpipe.layers = array<i64: 0, 1>, bitpipe.stage = 0 : i64}
// CUT:         %[[X:.*]] = nn.embedding
// CUT:         %[[S1:.*]] = nn.add %[[X]],
// CUT-NEXT:    return %[[X]], %[[S1]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>

// CUT-LABEL: func.func @toy_stage1(
// CUT-SAME:    %[[S1:[^:]+]]: tensor<2x4x8xf32>, %[[W:[^:]+]]: tensor<8x8xf32> {nn.param = "w"}) -> tensor<2x4x8xf32>
// CUT-SAME:    attributes {bitpipe.layers = array<i64: 2, 2>, bitpipe.stage = 1 : i64}

// Values that flow in are ordered as the model defines them: %x, then %s2.
// CUT-LABEL: func.func @toy_stage2(
// CUT-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>, %[[S2:[^:]+]]: tensor<2x4x8xf32>, %[[WTE:[^:]+]]: tensor<16x8xf32> {nn.param = "wte"}, %[[LAB:[^:]+]]: tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32>
// CUT-NEXT:    %[[G3:.*]] = nn.gelu %[[S2]]
// CUT-NEXT:    nn.add %[[X]], %[[G3]]

// CUT-LABEL: func.func @toy(
// CUT-SAME:    %[[WTE:[^:]+]]: tensor<16x8xf32> {nn.param = "wte"}, %[[WPE:[^:]+]]: tensor<4x8xf32> {nn.param = "wpe"}, %[[W:[^:]+]]: tensor<8x8xf32> {nn.param = "w"}, %[[TOK:[^:]+]]: tensor<2x4xi32> {nn.input = "tokens"}, %[[LAB:[^:]+]]: tensor<2x4xi32> {nn.input = "labels"})
// CUT-NEXT:    %[[S0:.*]]:2 = call @toy_stage0(%[[WTE]], %[[WPE]], %[[TOK]])
// CUT-NEXT:    %[[S2:.*]] = call @toy_stage1(%[[S0]]#1, %[[W]])
// CUT-NEXT:    %[[LOSS:.*]] = call @toy_stage2(%[[S0]]#0, %[[S2]], %[[WTE]], %[[LAB]])
// CUT-NEXT:    return %[[LOSS]] : tensor<f32>

// As many chunks as layers: one layer each, whatever the costs.
// PRINT:      partition of @toy into 5 chunks (forward + backward FLOPs per micro-batch)
// PRINT-NEXT: chunk  layers            flops  of max
// PRINT-NEXT: 0      0                   192   0.028
// PRINT-NEXT: 1      1                  1600   0.231
// PRINT-NEXT: 2      2                  3136   0.454
// PRINT-NEXT: 3      3                  1600   0.231
// PRINT-NEXT: 4      4                  6912   1.000
// PRINT-NEXT: max 6912, balance (max / mean) 2.571
