// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-insert-allreduce
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-insert-allreduce=bucket-mb=0 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=2" --bitpipe-insert-allreduce | not bitpipe-opt --bitpipe-insert-allreduce 2>&1 | FileCheck %s --check-prefix=TWICE

// SIZE: error: bitpipe-insert-allreduce: option 'bucket-mb' must be a finite number in (0, 1048576], got 0
// TWICE: error: 'bitpipe.allreduce_start' op is a gradient bucket already; bitpipe-insert-allreduce runs once, on the programs of bitpipe-schedule

// Gradients come from the backward functions.
module {
  // expected-error @+1 {{has no backward function ('bitpipe.backward' or 'bitpipe.backward_input'); run bitpipe-generate-backward before bitpipe-insert-allreduce}}
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>, tensor<16x8xf32> {nn.param = "wte"}, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
}

// -----

// The tied embedding is reduced over ranks 0 and 1; if the two stages
// disagree on its size, the two ranks would all-reduce buffers of
// different sizes: the cross-program check names both ranks.
// expected-error @+2 {{rank 1: its all-reduce #0 with group [0, 1] carries ["wte"] (256 bytes), but rank 0's carries ["wte"] (512 bytes); expected every member of a group to all-reduce the same gradients in the same order}}
// expected-note @+1 {{rank 0's program}}
module {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s0_bwd}
  func.func private @s0_bwd(tensor<2x4x8xf32>) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<16x8xf16> {nn.param = "wte"}, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @s1_bwd}
  func.func private @s1_bwd(tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<16x8xf16> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s1}
}

// -----

// A bucket must be laid out before the step runs.
module {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<?x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @s0_bwd}
  // expected-error @+1 {{returns gradient #0 as 'tensor<?x8xf32>'; expected a statically shaped tensor of ints or floats, whose size a bucket can hold}}
  func.func private @s0_bwd(tensor<2x4x8xf32>) -> (tensor<?x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @s1_bwd}
  func.func private @s1_bwd(tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>) attributes {bitpipe.backward_of = @s1}
}
