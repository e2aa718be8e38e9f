// RUN: bitpipe-opt %s --bitpipe-place="placement=bidirectional-v devices=4" | FileCheck %s --check-prefix=BIV
// RUN: bitpipe-opt %s --bitpipe-place="placement=v devices=4" | FileCheck %s --check-prefix=V
// RUN: bitpipe-opt %s --bitpipe-place="placement=loop devices=4 chunks-per-device=2" | FileCheck %s --check-prefix=LOOP
// RUN: bitpipe-opt %s --bitpipe-place="placement=bidirectional devices=8" | FileCheck %s --check-prefix=BI

// Eight stage functions, written out of stage order: bitpipe.devices follows
// the stage number, not the position in the module.

// BitPipe's two V's (docs/bitpipe-order.md): device r holds s(r), s(D-1-r),
// s(2D-1-r), s(D+r); replicas r and D-1-r.
// BIV: module attributes {
// BIV-SAME: bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 4, pipelines = {{\[}}[0, 1, 2, 3, 3, 2, 1, 0], [3, 2, 1, 0, 0, 1, 2, 3]]>
// BIV-SAME: bitpipe.world_size = 4 : i64
// BIV-LABEL: func.func private @m_stage3
// BIV-SAME: bitpipe.devices = array<i64: 0, 3>, bitpipe.stage = 3
// BIV-LABEL: func.func private @m_stage0
// BIV-SAME: bitpipe.devices = array<i64: 0, 3>, bitpipe.stage = 0
// BIV-LABEL: func.func private @m_stage1
// BIV-SAME: bitpipe.devices = array<i64: 1, 2>, bitpipe.stage = 1
// BIV-LABEL: func.func private @m_stage2
// BIV-SAME: bitpipe.devices = array<i64: 1, 2>, bitpipe.stage = 2
// BIV: func.func private @helper(tensor<2x4x8xf32>) -> tensor<2x4x8xf32>{{$}}
// BIV-LABEL: func.func private @m_stage4
// BIV-SAME: bitpipe.devices = array<i64: 0, 3>, bitpipe.stage = 4
// BIV-LABEL: func.func private @m_stage5
// BIV-SAME: bitpipe.devices = array<i64: 1, 2>, bitpipe.stage = 5
// BIV-LABEL: func.func private @m_stage6
// BIV-SAME: bitpipe.devices = array<i64: 1, 2>, bitpipe.stage = 6
// BIV-LABEL: func.func private @m_stage7
// BIV-SAME: bitpipe.devices = array<i64: 0, 3>, bitpipe.stage = 7

// A single V has no replicas; stages 3 and 4 share device 3.
// V: bitpipe.placement = #bitpipe.placement<kind = "v", devices = 4, pipelines = {{\[}}[0, 1, 2, 3, 3, 2, 1, 0]]>
// V-SAME: bitpipe.world_size = 4 : i64
// V-LABEL: func.func private @m_stage3
// V-SAME: bitpipe.devices = array<i64: 3>
// V-LABEL: func.func private @m_stage0
// V-SAME: bitpipe.devices = array<i64: 0>
// V-LABEL: func.func private @m_stage7
// V-SAME: bitpipe.devices = array<i64: 0>

// LOOP: bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 4, pipelines = {{\[}}[0, 1, 2, 3, 0, 1, 2, 3]]>
// LOOP-LABEL: func.func private @m_stage3
// LOOP-SAME: bitpipe.devices = array<i64: 3>
// LOOP-LABEL: func.func private @m_stage5
// LOOP-SAME: bitpipe.devices = array<i64: 1>

// Chimera on 8 devices: stage s on s (down) and 7-s (up).
// BI: bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 8, pipelines = {{\[}}[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0]]>
// BI-SAME: bitpipe.world_size = 8 : i64
// BI-LABEL: func.func private @m_stage3
// BI-SAME: bitpipe.devices = array<i64: 3, 4>
// BI-LABEL: func.func private @m_stage0
// BI-SAME: bitpipe.devices = array<i64: 0, 7>

module {
  func.func private @m_stage3(tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 3 : i64}
  func.func private @m_stage0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @m_stage1(tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 1 : i64}
  func.func private @m_stage2(tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 2 : i64}
  // Not a stage function: left alone.
  func.func private @helper(tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.func private @m_stage4(tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 4 : i64}
  func.func private @m_stage5(tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 5 : i64}
  func.func private @m_stage6(tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 6 : i64}
  func.func private @m_stage7(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 7 : i64}
}
