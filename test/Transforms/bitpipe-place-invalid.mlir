// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-place="placement=bidirectional-v devices=4"
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=zigzag devices=4" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="devices=4" 2>&1 | FileCheck %s --check-prefix=NOKIND
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=bidirectional devices=3" 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop" 2>&1 | FileCheck %s --check-prefix=NODEV
// RUN: not bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=v devices=4 chunks-per-device=2" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=2 chunks-per-device=3" 2>&1 | FileCheck %s --check-prefix=LOOP

// KIND: error: unknown placement 'zigzag' (expected loop, v, bidirectional or bidirectional-v)
// NOKIND: error: bitpipe-place needs placement=, one of loop, v, bidirectional or bidirectional-v{{$}}
// ODD: error: bidirectional placement needs an even number of devices (the two pipelines pair device r with device D-1-r), got 3
// NODEV: error: bitpipe-place: devices must be at least 1, got 0
// CHUNKS: error: chunks-per-device=2 only applies to the loop placement; the v placement fixes the chunks per device itself
// LOOP: error: loop placement on 2 devices with 3 chunks per device needs 6 stages, the module has 4 stage functions; partition with chunks=6

// Six stages where BitPipe on 4 devices needs 2D = 8.
// expected-error @+1 {{bidirectional-v placement on 4 devices needs 8 stages, the module has 6 stage functions; partition with chunks=8}}
module {
  func.func private @s0() attributes {bitpipe.stage = 0 : i64}
  func.func private @s1() attributes {bitpipe.stage = 1 : i64}
  func.func private @s2() attributes {bitpipe.stage = 2 : i64}
  func.func private @s3() attributes {bitpipe.stage = 3 : i64}
  func.func private @s4() attributes {bitpipe.stage = 4 : i64}
  func.func private @s5() attributes {bitpipe.stage = 5 : i64}
}

// -----

// Not partitioned at all.
// expected-error @+1 {{bidirectional-v placement on 4 devices needs 8 stages, the module has 0 stage functions; partition with chunks=8}}
module {
  func.func private @model()
}

// -----

module {
  // expected-note @+1 {{stage 1 here}}
  func.func private @a() attributes {bitpipe.stage = 1 : i64}
  // expected-error @+1 {{is stage 1, but @a already is; expected one function per stage}}
  func.func private @b() attributes {bitpipe.stage = 1 : i64}
}

// -----

// expected-error @+1 {{has stage functions up to stage 2 but none for stage 1; expected stages 0..2 each once}}
module {
  func.func private @a() attributes {bitpipe.stage = 0 : i64}
  func.func private @c() attributes {bitpipe.stage = 2 : i64}
}

// -----

module {
  // expected-error @+1 {{'bitpipe.stage' expects a non-negative stage number, got -1}}
  func.func private @a() attributes {bitpipe.stage = -1 : i64}
}

// -----

// expected-error @+1 {{already has per-rank programs; place stage functions before bitpipe-schedule}}
module {
  func.func private @s0() attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
  }
}
