// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-schedule="schedule=bitpipe microbatches=4"
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=0" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=loop devices=4 chunks-per-device=2" --bitpipe-schedule="schedule=1f1b microbatches=4" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=4" 2>&1 | FileCheck %s --check-prefix=ONECHUNK
// RUN: not bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=zigzag microbatches=4" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="microbatches=4" 2>&1 | FileCheck %s --check-prefix=NONAME
// RUN: not bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-place="placement=loop devices=2 chunks-per-device=4" --bitpipe-schedule="schedule=interleaved-1f1b microbatches=3" 2>&1 | FileCheck %s --check-prefix=VERIFY

// The placement is checked before N: the answer is "place differently"
// whatever the micro-batch count.
// KIND: error: schedule 'bitpipe' runs on a bidirectional-v placement (8 stages on 4 devices), but the module has a loop placement (4 stages on 4 devices); run bitpipe-place{placement=bidirectional-v devices=4}

// Same kind, other chunk count.
// CHUNKS: error: schedule '1f1b' runs on a loop placement (4 stages on 4 devices), but the module has a loop placement (8 stages on 4 devices); run bitpipe-place{placement=loop devices=4}

// The chunk count comes from the module's placement; the registry says what
// the schedule needs of it.
// ONECHUNK: error: cannot build schedule 'interleaved-1f1b' for the module's loop placement (4 stages on 4 devices): chunks-per-device must be at least 2 for interleaved-1f1b (use 1f1b for 1), got 1{{$}}

// A request the registry refuses: the option and what it expects.
// ZERO: error: cannot build schedule 'bitpipe' for the module's bidirectional-v placement (8 stages on 4 devices): microbatches must be at least 1, got 0{{$}}

// UNKNOWN: error: bitpipe-schedule: unknown schedule 'zigzag' (expected one of gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe, bitpipe-periodic, zb-h1, bitpipe-zb, bitpipe-periodic-zb, zbv){{$}}
// NONAME: error: bitpipe-schedule: schedule is required (one of gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe, bitpipe-periodic, zb-h1, bitpipe-zb, bitpipe-periodic-zb, zbv){{$}}

// An N for which the generator's order cannot run: the generator checks its
// own result with the library's verifier and refuses, naming the channel the
// two ranks would order differently.
// VERIFY: error: cannot build schedule 'interleaved-1f1b': interleaved-1f1b needs N to be a multiple of D=2 here: with N=3 the order with a smaller last group cannot run (channel rank 1 -> rank 0: rank 1's 8th send carries the gradient of B1.s7, but rank 0's 8th receive expects the activation of F2.s1 (the two ranks order this channel differently))

// expected-error @+1 {{has no 'bitpipe.placement'; run bitpipe-place before bitpipe-schedule}}
module {
  func.func private @s0() attributes {bitpipe.stage = 0 : i64}
}

// -----

// The placement names 8 stages, the module has 2 stage functions.
// expected-error @+1 {{has 2 stage functions, but its bidirectional-v placement (8 stages on 4 devices) names 8}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 4,
      pipelines = [[0, 1, 2, 3, 3, 2, 1, 0], [3, 2, 1, 0, 0, 1, 2, 3]]>
} {
  func.func private @s0() attributes {bitpipe.stage = 0 : i64}
  func.func private @s1() attributes {bitpipe.stage = 1 : i64}
}

// -----

// A hand-written placement that is not the library's bidirectional-v (the
// up pipeline is not the mirror image): the schedule would not mean what
// the generator meant.
// expected-error @+1 {{schedule 'bitpipe' runs on the library's bidirectional-v placement (4 stages on 2 devices), but pipeline 1 of the module's maps stages to devices [0, 1, 1, 0] instead of [1, 0, 0, 1]; run bitpipe-place{placement=bidirectional-v devices=2}}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 2,
      pipelines = [[0, 1, 1, 0], [0, 1, 1, 0]]>
} {
  func.func private @s0() attributes {bitpipe.stage = 0 : i64}
  func.func private @s1() attributes {bitpipe.stage = 1 : i64}
  func.func private @s2() attributes {bitpipe.stage = 2 : i64}
  func.func private @s3() attributes {bitpipe.stage = 3 : i64}
}

// -----

// expected-error @+1 {{already has per-rank programs; bitpipe-schedule runs once}}
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 2,
      pipelines = [[0, 1, 1, 0], [1, 0, 0, 1]]>
} {
  bitpipe.program @rank0 rank 0 {
  }
}

// A misspelt schedule gets the closest name when there is a clear one.
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=chimrea microbatches=4" 2>&1 | FileCheck %s --check-prefix=TYPO
// TYPO: error: bitpipe-schedule: unknown schedule 'chimrea' (did you mean 'chimera'?) (expected one of gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe, bitpipe-periodic, zb-h1, bitpipe-zb, bitpipe-periodic-zb, zbv){{$}}
