// Numeric pass options out of range: each refused before the pass changes
// anything, naming the pass, the option, the value and the range
// (docs/models.md, "Limits"). Negative and infinite values used to be
// ignored or to print NaN and negative results.

// bitpipe-simulate: f-cost=inf printed a NaN bubble; a negative tflops was
// ignored.
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-simulate=f-cost=inf 2>&1 | FileCheck %s --check-prefix=FCOST
// FCOST: error: bitpipe-simulate: option 'f-cost' must be a finite number in (0, 1000000000], got inf
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-simulate=b-cost=0 2>&1 | FileCheck %s --check-prefix=BCOST
// BCOST: error: bitpipe-simulate: option 'b-cost' must be a finite number in (0, 1000000000], got 0
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-simulate=w-cost=nan 2>&1 | FileCheck %s --check-prefix=WCOST
// WCOST: error: bitpipe-simulate: option 'w-cost' must be a finite number in (0, 1000000000], got nan
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-simulate=tflops=-1 2>&1 | FileCheck %s --check-prefix=TFLOPS
// TFLOPS: error: bitpipe-simulate: option 'tflops' must be a finite number in [0, 1000000], got -1
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-simulate=p2p-latency=-0.5 2>&1 | FileCheck %s --check-prefix=P2P
// P2P: error: bitpipe-simulate: option 'p2p-latency' must be a finite number in [0, 1000000000], got -0.5
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-simulate=ar-latency=1e300 2>&1 | FileCheck %s --check-prefix=AR
// AR: error: bitpipe-simulate: option 'ar-latency' must be a finite number in [0, 1000000000], got 1e+300

// bitpipe-insert-allreduce: bucket-mb=inf reported a negative byte count; a
// negative bucket-bytes was ignored.
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-insert-allreduce=bucket-mb=inf 2>&1 | FileCheck %s --check-prefix=MB
// MB: error: bitpipe-insert-allreduce: option 'bucket-mb' must be a finite number in (0, 1048576], got inf
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-insert-allreduce=bucket-bytes=-1 2>&1 | FileCheck %s --check-prefix=BYTES
// BYTES: error: bitpipe-insert-allreduce: option 'bucket-bytes' must be a finite number in [0, 1099511627776], got -1

// bitpipe-place: the schedule registry's limits (Registry.h).
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2147483647" 2>&1 | FileCheck %s --check-prefix=DEVICES
// DEVICES: error: bitpipe-place: devices must be at most 4096, got 2147483647
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2 chunks-per-device=-1" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// CHUNKS: error: bitpipe-place: chunks-per-device must be at least 1, got -1
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2 dp=0" 2>&1 | FileCheck %s --check-prefix=DP
// DP: error: bitpipe-place: dp must be at least 1, got 0

// bitpipe-schedule: micro-batches within the registry's limits.
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=-2" 2>&1 | FileCheck %s --check-prefix=NEG-N
// NEG-N: error: cannot build schedule '1f1b' for the module's loop placement (2 stages on 2 devices): microbatches must be at least 1, got -2
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop devices=2" --bitpipe-schedule="schedule=1f1b microbatches=100000" 2>&1 | FileCheck %s --check-prefix=BIG-N
// BIG-N: error: cannot build schedule '1f1b' for the module's loop placement (2 stages on 2 devices): microbatches must be at most 65536, got 100000

// bitpipe-pipeline: the registry refuses a split backward for a schedule
// without weight-gradient steps up front (it used to fail later, in
// bitpipe-insert-transfers); devices=2147483647 used to run on.
// RUN: bitpipe-import --config %examples/gpt-tiny.json -o %t.model.mlir
// RUN: not bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=1f1b devices=2 split-backward=true" 2>&1 | FileCheck %s --check-prefix=SPLIT
// SPLIT: error: bitpipe-pipeline: split-backward does not apply to schedule '1f1b': its steps have no weight-gradient (W) step to run the second half of a split backward (zb-h1 has them, and splits the backward without the option)
// RUN: bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=zb-h1 devices=2 split-backward=true" -o /dev/null
// RUN: not bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=1f1b devices=2147483647" 2>&1 | FileCheck %s --check-prefix=PIPE-DEVICES
// PIPE-DEVICES: error: bitpipe-pipeline: devices must be at most 4096, got 2147483647

// The error alone: no "see current operation" dump of the module after it
// (44 KB for a tiny model), unless asked for.
// RUN: not bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=chimera devices=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALONE --implicit-check-not="see current operation"
// ALONE: error: bitpipe-pipeline: devices must be even: chimera needs an even number of devices
// RUN: not bitpipe-opt %t.model.mlir --bitpipe-pipeline="schedule=chimera devices=3" -o /dev/null --mlir-print-op-on-diagnostic 2>&1 | FileCheck %s --check-prefix=ASKED
// ASKED: note: see current operation

// A misspelt option name: the closest valid one and all of them, for
// bitpipe's pipelines (every name) and for any pass (the names its default
// instance prints). One that MLIR takes is not refused: canonicalize's
// empty list options print nothing, yet are options.
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-pipeline="device=2 schedule=1f1b" 2>&1 | FileCheck %s --check-prefix=NAME-PIPELINE
// NAME-PIPELINE: bitpipe-opt: error: --bitpipe-pipeline: no such option 'device' (did you mean 'devices'?); its options: bucket-mb, chunks-per-device, devices, dp, gradient-sync, loops, max-in-flight, microbatches, recompute, schedule, split-backward, transfer-streams{{$}}
// NAME-PIPELINE-NOT: Pass-Options-Parser
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-lower-to-runtime="precison=bf16" 2>&1 | FileCheck %s --check-prefix=NAME-LOWER
// NAME-LOWER: error: --bitpipe-lower-to-runtime: no such option 'precison' (did you mean 'precision'?); its options: loops, nccl-rules, precision, target{{$}}
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-place="placement=loop device=2" 2>&1 | FileCheck %s --check-prefix=NAME-PASS
// NAME-PASS: error: --bitpipe-place: no such option 'device' (did you mean 'devices'?); its options: {{.*}}chunks-per-device, devices, dp{{.*}}
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --bitpipe-partition="xyz=1" 2>&1 | FileCheck %s --check-prefix=NAME-FAR
// NAME-FAR: error: --bitpipe-partition: no such option 'xyz'; its options: {{.*}}
// RUN: not bitpipe-opt %S/Inputs/gpt-2-stages.mlir --cse="x=1" 2>&1 | FileCheck %s --check-prefix=NAME-NONE
// NAME-NONE: error: --cse: no such option 'x'; it takes none
// RUN: bitpipe-opt %S/Inputs/gpt-2-stages.mlir --canonicalize="disable-patterns=none" -o /dev/null
