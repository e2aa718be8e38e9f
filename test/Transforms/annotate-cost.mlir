// RUN: bitpipe-opt %s --bitpipe-annotate-cost | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-annotate-cost=print-summary -o /dev/null | FileCheck %s --check-prefix=SUMMARY

// A one-layer model, worked out by hand. B = 2, T = 4 (M = 8 positions),
// H = 8 (2 heads), V = 16, f32 (4 bytes). x = [2, 4, 8] has 64 elements.
//
// layer 0 embedding:  fwd 64 (one add per element), bwd 2 * 64 = 128;
//                     params wte 16*8 + wpe 4*8 = 160 (640 bytes);
//                     saved: tokens 8 x i32 = 32 bytes.
// layer 1 layer_norm: fwd 5 * 64 = 320, bwd 640; params 16 (64 bytes);
//                     saved x (256 bytes) and its statistics, mean and
//                     rstd of 8 rows (64 bytes): 320.
//         linear qkv: fwd 2*8*8*24 = 3072 + bias 8*24 = 192 -> 3264;
//                     bwd 2 * 3072 + 192 = 6336; params 24*8 + 24 = 216
//                     (864 bytes); saved ln (256 bytes).
//         attention:  fwd 4*B*T*T*H = 4*2*4*4*8 = 1024, bwd 2048;
//                     saved qkv 8*24*4 = 768 bytes, and for its saved
//                     statistics the output (256 bytes) and the rows'
//                     log-sum-exps, B*heads*T = 16 floats (64 bytes): 1088.
//         add:        fwd 64, bwd 0, saves nothing.
//         gelu:       fwd 8 * 64 = 512, bwd 1024; saved r (256 bytes).
//   layer 1 total:    fwd 5184, bwd 10048, params 232 (928 bytes),
//                     act 320 + 256 + 1088 + 256 = 1920.
// layer 2 linear:     fwd 2*8*8*16 = 2048, bwd 4096; param wte (512 bytes,
//                     the tied embedding); saved ge (256 bytes).
//         cross_entr: fwd 4*8*16 = 512, bwd 2*8*16 = 256; saved logits
//                     8*16*4 = 512 + labels 32 + the rows' max and
//                     log-sum 8*2*4 = 64: 608 bytes.
//   layer 2 total:    fwd 2560, bwd 4352, params 128 (512 bytes), act 864.
// model: fwd 7808, bwd 14528; params 392 (1568 bytes): wte counted once;
//        act 32 + 1920 + 864 = 2816.

// CHECK-LABEL: func @tiny
func.func @tiny(%wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>,
                %g: tensor<8xf32>, %b: tensor<8xf32>,
                %w: tensor<24x8xf32>, %bias: tensor<24xf32>,
                %tok: tensor<2x4xi32>, %lab: tensor<2x4xi32>) -> tensor<f32> {
  // CHECK: nn.embedding {{.*}}nn.cost = #nn.cost<fwd_flops = 64, bwd_flops = 128, param_bytes = 640, act_bytes = 32>
  %x = nn.embedding %tok, %wte, %wpe {nn.layer = 0} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.layer_norm {{.*}}nn.cost = #nn.cost<fwd_flops = 320, bwd_flops = 640, param_bytes = 64, act_bytes = 320>
  %ln = nn.layer_norm %x, %g, %b {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.linear {{.*}}nn.cost = #nn.cost<fwd_flops = 3264, bwd_flops = 6336, param_bytes = 864, act_bytes = 256>
  %qkv = nn.linear %ln, %w, %bias {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  // CHECK: nn.attention {{.*}}nn.cost = #nn.cost<fwd_flops = 1024, bwd_flops = 2048, param_bytes = 0, act_bytes = 1088>
  %a = nn.attention %qkv heads(2) causal {nn.layer = 1} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.add {{.*}}nn.cost = #nn.cost<fwd_flops = 64, bwd_flops = 0, param_bytes = 0, act_bytes = 0>
  %r = nn.add %x, %a {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.gelu {{.*}}nn.cost = #nn.cost<fwd_flops = 512, bwd_flops = 1024, param_bytes = 0, act_bytes = 256>
  %ge = nn.gelu %r {nn.layer = 1} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.linear {{.*}}nn.cost = #nn.cost<fwd_flops = 2048, bwd_flops = 4096, param_bytes = 512, act_bytes = 256>
  %logits = nn.linear %ge, %wte {nn.layer = 2} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: nn.cross_entropy {{.*}}nn.cost = #nn.cost<fwd_flops = 512, bwd_flops = 256, param_bytes = 0, act_bytes = 608>
  %loss = nn.cross_entropy %logits, %lab {nn.layer = 2} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// SUMMARY:      cost of @tiny, per micro-batch
// SUMMARY-NEXT: layer   kind           ops        fwd_flops        bwd_flops         params    param_bytes      act_bytes
// SUMMARY-NEXT: 0       embedding        1               64              128            160            640             32
// SUMMARY-NEXT: 1       transformer      5             5184            10048            232            928           1920
// SUMMARY-NEXT: 2       head             2             2560             4352            128            512            864
// SUMMARY-NEXT: total                    8             7808            14528            392           1568           2816
// SUMMARY-NEXT: parameters: 392 (0.000 billion)

// A LLaMA layer (docs/llama.md), worked out by hand (NNCost.cpp's
// conventions). B = 2, T = 4, H = 8 (2 query heads, 1 key/value head of
// d = 4: q/k/v width (2 + 2 * 1) * 4 = 16), MLP width 12, V = 16.
//   embedding, no positions: fwd 0 (a gather), bwd 64 (scatter-add into one
//                  table); params wte 128 (512 bytes); saved tokens 32.
//   rms_norm:      fwd 4 * 64 = 256, bwd 512; gain 8 (32 bytes); saved x
//                  and its rows' rstd (8 floats): 288 bytes.
//   rotary:        3 per rotated element, q and k: 2*4*(2 + 1)*4 = 96
//                  elements, fwd = bwd = 288; keeps nothing.
//   attention:     4*B*T*T*H over the query heads' width, 4*2*4*4*8 =
//                  1024, bwd 2048; saved qkv 2*4*16*4 = 512 bytes, the
//                  output (256) and the log-sum-exps (16 floats): 832.
//   gate, up:      2*8*8*12 = 1536 each, bwd 3072; params 96 (384 bytes).
//   swiglu:        6 per element, 96 elements: 576, bwd 1152; saved gate
//                  and up, 2 * 96 * 4 = 768 bytes.
//   head (untied): 2*8*8*16 = 2048, bwd 4096; its own weight (512 bytes).
// CHECK-LABEL: func @llama_layer
// CHECK: nn.embedding {{.*}}nn.cost = #nn.cost<fwd_flops = 0, bwd_flops = 64, param_bytes = 512, act_bytes = 32>
// CHECK: nn.rms_norm {{.*}}nn.cost = #nn.cost<fwd_flops = 256, bwd_flops = 512, param_bytes = 32, act_bytes = 288>
// CHECK: nn.linear {{.*}}nn.cost = #nn.cost<fwd_flops = 2048, bwd_flops = 4096, param_bytes = 512, act_bytes = 256>
// CHECK: nn.rotary {{.*}}nn.cost = #nn.cost<fwd_flops = 288, bwd_flops = 288, param_bytes = 0, act_bytes = 0>
// CHECK: nn.attention {{.*}}nn.cost = #nn.cost<fwd_flops = 1024, bwd_flops = 2048, param_bytes = 0, act_bytes = 832>
// CHECK: nn.linear {{.*}}nn.cost = #nn.cost<fwd_flops = 1536, bwd_flops = 3072, param_bytes = 384, act_bytes = 256>
// CHECK: nn.linear {{.*}}nn.cost = #nn.cost<fwd_flops = 1536, bwd_flops = 3072, param_bytes = 384, act_bytes = 256>
// CHECK: nn.swiglu {{.*}}nn.cost = #nn.cost<fwd_flops = 576, bwd_flops = 1152, param_bytes = 0, act_bytes = 768>
// CHECK: nn.linear {{.*}}nn.cost = #nn.cost<fwd_flops = 2048, bwd_flops = 4096, param_bytes = 512, act_bytes = 256>
func.func @llama_layer(%wte: tensor<16x8xf32>, %g: tensor<8xf32>,
                       %wqkv: tensor<16x8xf32>, %wgate: tensor<12x8xf32>,
                       %wup: tensor<12x8xf32>, %whead: tensor<16x8xf32>,
                       %tok: tensor<2x4xi32>, %lab: tensor<2x4xi32>) -> tensor<f32> {
  %x = nn.embedding %tok, %wte {nn.layer = 0} : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %n = nn.rms_norm %x, %g {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = nn.linear %n, %wqkv {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %rot = nn.rotary %qkv heads(2) kv_heads(1) {nn.layer = 1} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %a = nn.attention %rot heads(2) kv_heads(1) causal {nn.layer = 1} : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
  %gate = nn.linear %a, %wgate {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %up = nn.linear %a, %wup {nn.layer = 1} : (tensor<2x4x8xf32>, tensor<12x8xf32>) -> tensor<2x4x12xf32>
  %s = nn.swiglu %gate, %up {nn.layer = 1} : (tensor<2x4x12xf32>, tensor<2x4x12xf32>) -> tensor<2x4x12xf32>
  %logits = nn.linear %a, %whead {nn.layer = 2} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %lab {nn.layer = 2} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
