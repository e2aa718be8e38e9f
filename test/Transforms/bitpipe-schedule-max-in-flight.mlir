// 1F1B with fewer micro-batches in flight (docs/schedules.md, "Fewer
// micro-batches in flight"): bitpipe-schedule's and bitpipe-pipeline's
// max-in-flight option reaches the registry, the order holds at most 2 per
// rank, its note goes into bitpipe.schedule, and a cap the registry refuses
// is named with its value and range.
//
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4 max-in-flight=2" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=CAP2
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4 max-in-flight=2" | FileCheck %s --check-prefix=ATTR
// A cap of D is 1F1B itself, without a note.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4 max-in-flight=4" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=CAP4
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4 max-in-flight=5" 2>&1 | FileCheck %s --check-prefix=TOOBIG
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4 max-in-flight=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// 0 is "not given" (1F1B) for bitpipe-schedule, which bitpipe-pipeline builds
// from a struct that sets every option; bitpipe-pipeline refuses it.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4 max-in-flight=0" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=CAP4
// RUN: not bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=gpipe microbatches=4 max-in-flight=2" 2>&1 | FileCheck %s --check-prefix=OTHER
//
// The whole pipeline, from the model: the same option, the same checks.
// RUN: bitpipe-import --config %examples/gpt-tiny.json -o %t.model.mlir
// RUN: bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=1f1b devices=4 microbatches=8 max-in-flight=2 loops=false" --bitpipe-simulate=grid -o /dev/null | FileCheck %s --check-prefix=PIPE
// RUN: not bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=bitpipe devices=4 max-in-flight=2" 2>&1 | FileCheck %s --check-prefix=PIPE-OTHER

// CAP2:      P0: F0.s0 F1.s0 B0.s0 F2.s0 B1.s0 F3.s0 B2.s0 B3.s0{{$}}
// CAP2-NEXT: P1: F0.s1 F1.s1 B0.s1 B1.s1 F2.s1 F3.s1 B2.s1 B3.s1{{$}}
// CAP2-NEXT: P2: F0.s2 F1.s2 B0.s2 B1.s2 F2.s2 F3.s2 B2.s2 B3.s2{{$}}
// CAP2-NEXT: P3: F0.s3 B0.s3 F1.s3 B1.s3 F2.s3 B2.s3 F3.s3 B3.s3{{$}}
// CAP2-NEXT: schedule 1f1b: 4 devices, loop placement, 4 stages, 4 micro-batches, costs=unit
// CAP2-NEXT: note: at most 2 micro-batches in flight per rank (max-in-flight=2; 1F1B holds D - r on rank r)
// CAP2-NEXT: makespan: 27
// CAP2:      P0{{ +[0-9.]+ +[0-9.]+ +}}2{{ }}
// CAP2-NEXT: P1{{ +[0-9.]+ +[0-9.]+ +}}2{{ }}
// CAP2-NEXT: P2{{ +[0-9.]+ +[0-9.]+ +}}2{{ }}
// CAP2-NEXT: P3{{ +[0-9.]+ +[0-9.]+ +}}1{{ }}

// ATTR: bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 4, microbatch_pipelines = [0, 0, 0, 0], split_backward = false, note = "at most 2 micro-batches in flight per rank (max-in-flight=2; 1F1B holds D - r on rank r)">

// CAP4:      P0: F0.s0 F1.s0 F2.s0 F3.s0 B0.s0 B1.s0 B2.s0 B3.s0{{$}}
// CAP4-NEXT: P1: F0.s1 F1.s1 F2.s1 B0.s1 F3.s1 B1.s1 B2.s1 B3.s1{{$}}
// CAP4-NEXT: P2: F0.s2 F1.s2 B0.s2 F2.s2 B1.s2 F3.s2 B2.s2 B3.s2{{$}}
// CAP4-NEXT: P3: F0.s3 B0.s3 F1.s3 B1.s3 F2.s3 B2.s3 F3.s3 B3.s3{{$}}
// CAP4-NEXT: schedule 1f1b: 4 devices, loop placement, 4 stages, 4 micro-batches, costs=unit
// CAP4-NEXT: makespan: 21

// TOOBIG: error: cannot build schedule '1f1b' for the module's loop placement (4 stages on 4 devices): max-in-flight must be at most 4 (devices: 1f1b without a cap holds at most D micro-batches in flight), got 5{{$}}
// NEGATIVE: error: cannot build schedule '1f1b' for the module's loop placement (4 stages on 4 devices): max-in-flight must be at least 1, got -1{{$}}
// OTHER: error: cannot build schedule 'gpipe' for the module's loop placement (4 stages on 4 devices): max-in-flight=2 does not apply to schedule 'gpipe' (only these take a cap on the micro-batches in flight: 1f1b){{$}}

// PIPE: note: at most 2 micro-batches in flight per rank (max-in-flight=2; 1F1B holds D - r on rank r)
// PIPE: P0{{ +[0-9.]+ +[0-9.]+ +}}2{{ }}
// PIPE-NEXT: P1{{ +[0-9.]+ +[0-9.]+ +}}2{{ }}
// PIPE-NEXT: P2{{ +[0-9.]+ +[0-9.]+ +}}2{{ }}
// PIPE-NEXT: P3{{ +[0-9.]+ +[0-9.]+ +}}1{{ }}

// PIPE-OTHER: error: bitpipe-pipeline: max-in-flight=2 does not apply to schedule 'bitpipe' (only these take a cap on the micro-batches in flight: 1f1b){{$}}

// RUN: not bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=1f1b devices=4 max-in-flight=0" 2>&1 | FileCheck %s --check-prefix=PIPE-ZERO
// PIPE-ZERO: error: bitpipe-pipeline: max-in-flight must be at least 1, got 0{{$}}
