// Option errors of bitpipe-partition, one RUN line each, on a valid model
// of three layers (0, 1, 2). Each names the option and what it expects.
//
// RUN: not bitpipe-opt %s --bitpipe-partition 2>&1 | FileCheck %s --check-prefix=NEITHER
// RUN: not bitpipe-opt %s --bitpipe-partition=chunks=0 2>&1 | FileCheck %s --check-prefix=NEITHER
// RUN: not bitpipe-opt %s --bitpipe-partition="chunks=2 boundaries=1" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not bitpipe-opt %s --bitpipe-partition=chunks=4 2>&1 | FileCheck %s --check-prefix=TOO-MANY
// RUN: not bitpipe-opt %s --bitpipe-partition=boundaries=2,1 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not bitpipe-opt %s --bitpipe-partition=boundaries=1,1 2>&1 | FileCheck %s --check-prefix=REPEAT
// RUN: not bitpipe-opt %s --bitpipe-partition=boundaries=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not bitpipe-opt %s --bitpipe-partition=boundaries=1,3 2>&1 | FileCheck %s --check-prefix=RANGE
// And the same model is fine with valid options:
// RUN: bitpipe-opt %s --bitpipe-partition=chunks=3 | FileCheck %s --check-prefix=VALID
// RUN: bitpipe-opt %s --bitpipe-partition=boundaries=1,2 | FileCheck %s --check-prefix=VALID

// NEITHER: partition-invalid-options.mlir:[[# @LINE + 8]]:1: error: bitpipe-partition expects exactly one of 'chunks' (a positive number of chunks) and 'boundaries' (the layers that start chunks), got neither
// BOTH: error: bitpipe-partition expects exactly one of 'chunks' (a positive number of chunks) and 'boundaries' (the layers that start chunks), got both
// TOO-MANY: error: bitpipe-partition option 'chunks' on @three: cannot cut 3 layers into 4 chunks: every chunk needs at least one layer
// ORDER: error: bitpipe-partition option 'boundaries' on @three: boundaries must be strictly increasing: 1 follows 2
// REPEAT: error: bitpipe-partition option 'boundaries' on @three: boundaries must be strictly increasing: 1 follows 1
// ZERO: error: bitpipe-partition option 'boundaries' on @three: boundary 0 is out of range: a chunk can start only at layers 1..2 (layer 0 always starts the first chunk)
// RANGE: error: bitpipe-partition option 'boundaries' on @three: boundary 3 is out of range: a chunk can start only at layers 1..2 (layer 0 always starts the first chunk)
// VALID: bitpipe.partition = #bitpipe.partition<chunks = 3, starts = [0, 1, 2], costs = [{{.*}}], balance = {{.*}}>
func.func @three(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 8, heads = 1, vocab = 8, max_positions = 2, seq_len = 2, microbatch_size = 2>} {
  %a = nn.gelu %x {nn.layer = 0} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = nn.gelu %a {nn.layer = 1} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = nn.gelu %b {nn.layer = 2} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}
