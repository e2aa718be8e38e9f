// RUN: bitpipe-opt %s -split-input-file | bitpipe-opt -split-input-file | FileCheck %s
// RUN: bitpipe-opt %s -split-input-file --mlir-print-op-generic | bitpipe-opt -split-input-file | FileCheck %s

// #bitpipe.schedule: fields in any order in, in declaration order out; the
// note only when there is one.

// CHECK-LABEL: module attributes
// CHECK-SAME: bitpipe.schedule = #bitpipe.schedule<name = "bitpipe", microbatches = 5, microbatch_pipelines = [0, 0, 1, 1, 0], split_backward = false, note = "N=5 is not a multiple of D=4">
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 4,
                                         pipelines = [[0, 1, 2, 3, 3, 2, 1, 0],
                                                      [3, 2, 1, 0, 0, 1, 2, 3]]>,
  bitpipe.schedule = #bitpipe.schedule<split_backward = false,
                                       note = "N=5 is not a multiple of D=4",
                                       microbatch_pipelines = [0, 0, 1, 1, 0],
                                       microbatches = 5, name = "bitpipe">
} {}

// -----

// CHECK-LABEL: module attributes
// CHECK-SAME: bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = true>
// CHECK-NOT: note
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = true, note = "">
} {}

// -----

// #bitpipe.partition: bitpipe-partition's record of the cut.
// CHECK-LABEL: module attributes
// CHECK-SAME: bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 4], costs = [6528, 6912], balance = 1.0286>
module attributes {
  bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 4],
                                         costs = [6528, 6912], balance = 1.0286>
} {}

// -----

// #bitpipe.recompute: bitpipe-generate-backward's record of what the
// backwards compute again.
// CHECK-LABEL: module attributes
// CHECK-SAME: bitpipe.recompute = #bitpipe.recompute<selective>
module attributes {bitpipe.recompute = #bitpipe.recompute<selective>} {}

// -----

// #bitpipe.gradient_sync: bitpipe-insert-allreduce's record of how a group
// of several pipeline ranks sums across the copies.
// CHECK-LABEL: module attributes
// CHECK-SAME: bitpipe.gradient_sync = #bitpipe.gradient_sync<hierarchical>
module attributes {bitpipe.gradient_sync = #bitpipe.gradient_sync<hierarchical>} {}

// -----

// CHECK-LABEL: module attributes
// CHECK-SAME: bitpipe.gradient_sync = #bitpipe.gradient_sync<flat>
module attributes {bitpipe.gradient_sync = #bitpipe.gradient_sync<flat>} {}
