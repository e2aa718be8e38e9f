// Sizes in the tiny GPT of Inputs/: wte 16x8xf32 = 512 bytes (tied: stage 0
// and the last stage), wpe 4x8xf32 = 128, every hN.w 8x8xf32 = 256.

// BitPipe, D=4, N=4. Grid (docs/bitpipe-order.md):
//   P0: ... B3.s4 B3.s3 B0.s0 AR(4,7) B1.s0 AR(0,3)
//   P1: ... B3.s2 B1.s1 AR(5,6) AR(1,2)
// Rank r and 3-r hold the same four stages: groups {0,3} and {1,2}. Stage
// 7's only gradient is the tied wte, summed on rank 0 with stage 0's and
// final only after B1.s0: it goes with the second marker, whose bucket then
// carries stages 0, 3 and 7; the first marker keeps h4.w alone.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce | FileCheck %s --check-prefix=BITPIPE
// The bucketed form round-trips.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce | bitpipe-opt | FileCheck %s --check-prefix=BITPIPE

// BITPIPE-LABEL: bitpipe.program @rank0 rank 0 {
// BITPIPE:         backward(%{{.*}}) stage 3 microbatch 3
// BITPIPE-NEXT:    backward(%{{.*}}) stage 0 microbatch 0
// BITPIPE-NEXT:    %[[A:.+]] = allreduce_start stages [4] group [0, 3] bucket 0 grads ["h4.w"] bytes 256 : !bitpipe.token
// BITPIPE-NEXT:    backward(%{{.*}}) stage 0 microbatch 1
// BITPIPE-NEXT:    %[[B:.+]] = allreduce_start stages [0, 3, 7] group [0, 3] bucket 1 grads ["h3.w", "wte", "wpe"] bytes 896 : !bitpipe.token
// BITPIPE-NEXT:    allreduce_wait %[[A]]
// BITPIPE-NEXT:    allreduce_wait %[[B]]
// BITPIPE-NEXT:    optimizer_step microbatches 4
// BITPIPE-NEXT:  }
// BITPIPE-LABEL: bitpipe.program @rank1 rank 1 {
// BITPIPE:         backward(%{{.*}}) stage 1 microbatch 1
// BITPIPE-NEXT:    %[[A:.+]] = allreduce_start stages [5, 6] group [1, 2] bucket 0 grads ["h6.w", "h5.w"] bytes 512 : !bitpipe.token
// BITPIPE-NEXT:    %[[B:.+]] = allreduce_start stages [1, 2] group [1, 2] bucket 1 grads ["h2.w", "h1.w"] bytes 512 : !bitpipe.token
// BITPIPE-NEXT:    allreduce_wait %[[A]]
// BITPIPE-NEXT:    allreduce_wait %[[B]]
// BITPIPE-NEXT:    optimizer_step microbatches 4
// BITPIPE-LABEL: bitpipe.program @rank2 rank 2 {
// BITPIPE:         allreduce_start stages [5, 6] group [1, 2] bucket 0 grads ["h6.w", "h5.w"] bytes 512
// BITPIPE-NEXT:    allreduce_start stages [1, 2] group [1, 2] bucket 1 grads ["h2.w", "h1.w"] bytes 512
// BITPIPE-LABEL: bitpipe.program @rank3 rank 3 {
// BITPIPE:         backward(%{{.*}}) stage 0 microbatch 2
// BITPIPE-NEXT:    allreduce_start stages [4] group [0, 3] bucket 0 grads ["h4.w"] bytes 256
// BITPIPE-NEXT:    backward(%{{.*}}) stage 0 microbatch 3
// BITPIPE-NEXT:    allreduce_start stages [0, 3, 7] group [0, 3] bucket 1 grads ["h3.w", "wte", "wpe"] bytes 896
// BITPIPE-NOT:   allreduce_start
// BITPIPE-NOT:   bitpipe.program

// BitPipe with dp=2: one all-reduce over the mirror partner and both copies,
// not one per kind of replica; the average runs over N * K = 8
// micro-batches. The module still holds one program per pipeline rank,
// which both copies run; a group names pipeline ranks and stands for them
// in every copy (docs/data-parallel.md): [0, 3] is world ranks {0,3,4,7}.
// By default a group of two pipeline ranks sums in two levels at run time
// (docs/data-parallel.md, "Two levels"): the module says so, the buckets
// are the same; sync=flat writes the one all-reduce.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4 dp=2" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce | FileCheck %s --check-prefixes=DP,DP-TWO-LEVEL
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4 dp=2" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce=sync=flat | FileCheck %s --check-prefixes=DP,DP-FLAT
// DP:          bitpipe.data_parallel = 2 : i64
// DP-TWO-LEVEL-SAME: bitpipe.gradient_sync = #bitpipe.gradient_sync<hierarchical>
// DP-FLAT-SAME: bitpipe.gradient_sync = #bitpipe.gradient_sync<flat>
// DP-SAME:     bitpipe.world_size = 8 : i64
// DP-LABEL: bitpipe.program @rank0 rank 0 {
// DP:            backward(%{{.*}}) stage 0 microbatch 0
// DP-NEXT:       allreduce_start stages [4] group [0, 3] bucket 0 grads ["h4.w"] bytes 256
// DP-NEXT:       backward(%{{.*}}) stage 0 microbatch 1
// DP-NEXT:       allreduce_start stages [0, 3, 7] group [0, 3] bucket 1
// DP:            optimizer_step microbatches 8
// DP-LABEL: bitpipe.program @rank1 rank 1 {
// DP:            allreduce_start stages [5, 6] group [1, 2] bucket 0
// DP-NEXT:       allreduce_start stages [1, 2] group [1, 2] bucket 1
// DP-LABEL: bitpipe.program @rank3 rank 3 {
// DP-NOT:    bitpipe.program

// Copy 1 written out with world ranks: pipeline rank 0 is world rank 4, and
// its groups list every copy's members, the ranks the all-reduce spans.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4 dp=2" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce --bitpipe-instantiate-copy=copy=1 | FileCheck %s --check-prefix=COPY1
// COPY1:          bitpipe.data_parallel_copy = 1 : i64
// COPY1-LABEL: bitpipe.program @rank4 rank 4 {
// COPY1-NEXT:       load_input tokens microbatch 0
// COPY1-NEXT:       forward(%{{.*}}) stage 0 microbatch 0
// COPY1:            backward(%{{.*}}) stage 0 microbatch 0
// COPY1-NEXT:       allreduce_start stages [4] group [0, 3, 4, 7] bucket 0 grads ["h4.w"] bytes 256
// COPY1-LABEL: bitpipe.program @rank5 rank 5 {
// COPY1:            allreduce_start stages [5, 6] group [1, 2, 5, 6] bucket 0
// COPY1-LABEL: bitpipe.program @rank7 rank 7 {
// COPY1:            allreduce_start stages [0, 3, 7] group [0, 3, 4, 7] bucket 1
// COPY1:            optimizer_step microbatches 8

// Small buckets: bucket-mb=0.0003 is 315 bytes. Rank 0's second sync point
// (h3.w 256, wte 512, wpe 128) becomes three buckets: wte does not fit
// after h3.w and is larger than a bucket (a bucket of its own, as DDP),
// wpe does not fit after it. All start at the same point, in order.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce=bucket-mb=0.0003 | FileCheck %s --check-prefix=SMALL
// The same in bytes.
// RUN: bitpipe-opt %S/Inputs/gpt-8-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=bidirectional-v devices=4" --bitpipe-schedule="schedule=bitpipe microbatches=4" --bitpipe-insert-allreduce=bucket-bytes=315 | FileCheck %s --check-prefix=SMALL
// SMALL-LABEL: bitpipe.program @rank0 rank 0 {
// SMALL:         backward(%{{.*}}) stage 0 microbatch 1
// SMALL-NEXT:    %[[B1:.+]] = allreduce_start stages [3] group [0, 3] bucket 1 grads ["h3.w"] bytes 256
// SMALL-NEXT:    %[[B2:.+]] = allreduce_start stages [0, 7] group [0, 3] bucket 2 grads ["wte"] bytes 512
// SMALL-NEXT:    %[[B3:.+]] = allreduce_start stages [0] group [0, 3] bucket 3 grads ["wpe"] bytes 128
// SMALL-NEXT:    allreduce_wait %{{.+}}
// SMALL-NEXT:    allreduce_wait %[[B1]]
// SMALL-NEXT:    allreduce_wait %[[B2]]
// SMALL-NEXT:    allreduce_wait %[[B3]]
// SMALL-NEXT:    optimizer_step microbatches 4
// Rank 1's sync points each hold two 256-byte gradients: two buckets each.
// SMALL-LABEL: bitpipe.program @rank1 rank 1 {
// SMALL:         backward(%{{.*}}) stage 1 microbatch 1
// SMALL-NEXT:    allreduce_start stages [6] group [1, 2] bucket 0 grads ["h6.w"] bytes 256
// SMALL-NEXT:    allreduce_start stages [5] group [1, 2] bucket 1 grads ["h5.w"] bytes 256
// SMALL-NEXT:    allreduce_start stages [2] group [1, 2] bucket 2 grads ["h2.w"] bytes 256
// SMALL-NEXT:    allreduce_start stages [1] group [1, 2] bucket 3 grads ["h1.w"] bytes 256

// 1F1B with dp=2 on 4 devices: every stage has one holder per copy, so a
// group is one pipeline rank, [r], which stands for world ranks {r, r+4}
// (docs/data-parallel.md); no schedule markers, so each bucket starts
// right after the last backward of its stage. The tied wte lives on
// devices 0 and 3: its own bucket over [0, 3], after the stage's other
// gradients.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4 dp=2" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-insert-allreduce | FileCheck %s --check-prefix=ONEF
// ONEF-LABEL: bitpipe.program @rank0 rank 0 {
// ONEF:          backward(%{{.*}}) stage 0 microbatch 3
// ONEF-NEXT:     allreduce_start stages [0] group [0] bucket 0 grads ["wpe"] bytes 128
// ONEF-NEXT:     allreduce_start stages [0] group [0, 3] bucket 1 grads ["wte"] bytes 512
// ONEF-NEXT:     allreduce_wait
// ONEF-NEXT:     allreduce_wait
// ONEF-NEXT:     optimizer_step microbatches 8
// ONEF-LABEL: bitpipe.program @rank1 rank 1 {
// ONEF:          backward(%{{.*}}) stage 1 microbatch 3
// ONEF-NEXT:     allreduce_start stages [1] group [1] bucket 0 grads ["h1.w"] bytes 256
// ONEF-LABEL: bitpipe.program @rank2 rank 2 {
// ONEF:          allreduce_start stages [2] group [2] bucket 0 grads ["h2.w"] bytes 256
// ONEF-LABEL: bitpipe.program @rank3 rank 3 {
// ONEF:          backward(%{{.*}}) stage 3 microbatch 3
// ONEF-NEXT:     allreduce_start stages [3] group [0, 3] bucket 0 grads ["wte"] bytes 512
// ONEF-NEXT:     allreduce_wait
// ONEF-NEXT:     optimizer_step microbatches 8
// ONEF-NOT:  bitpipe.program

// Copy 1 of it, with world ranks: [1] is {1, 5}, [0, 3] is {0, 3, 4, 7}.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4 dp=2" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-insert-allreduce --bitpipe-instantiate-copy=copy=1 | FileCheck %s --check-prefix=ONEF-COPY1
// ONEF-COPY1-LABEL: bitpipe.program @rank4 rank 4 {
// ONEF-COPY1:          allreduce_start stages [0] group [0, 4] bucket 0 grads ["wpe"] bytes 128
// ONEF-COPY1-NEXT:     allreduce_start stages [0] group [0, 3, 4, 7] bucket 1 grads ["wte"] bytes 512
// ONEF-COPY1-LABEL: bitpipe.program @rank5 rank 5 {
// ONEF-COPY1:          allreduce_start stages [1] group [1, 5] bucket 0 grads ["h1.w"] bytes 256

// 1F1B without data parallelism: only the tied embedding is replicated, on
// the first and the last device; the middle ranks have nothing to reduce.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward --bitpipe-place="placement=loop devices=4" --bitpipe-schedule="schedule=1f1b microbatches=4" --bitpipe-insert-allreduce | FileCheck %s --check-prefix=TIED
// TIED-LABEL: bitpipe.program @rank0 rank 0 {
// TIED:          backward(%{{.*}}) stage 0 microbatch 3
// TIED-NEXT:     %[[T:.+]] = allreduce_start stages [0] group [0, 3] bucket 0 grads ["wte"] bytes 512
// TIED-NEXT:     allreduce_wait %[[T]]
// TIED-NEXT:     optimizer_step microbatches 4
// TIED-LABEL: bitpipe.program @rank1 rank 1 {
// TIED-NOT:      allreduce_start
// TIED:          optimizer_step microbatches 4
// TIED-LABEL: bitpipe.program @rank2 rank 2 {
// TIED-NOT:      allreduce_start
// TIED:          optimizer_step microbatches 4
// TIED-LABEL: bitpipe.program @rank3 rank 3 {
// TIED:          backward(%{{.*}}) stage 3 microbatch 3
// TIED-NEXT:     allreduce_start stages [3] group [0, 3] bucket 0 grads ["wte"] bytes 512

// Split backward (ZB-H1): gradients are final after the last weight-gradient
// step, not the last input-gradient one.
// RUN: bitpipe-opt %S/Inputs/gpt-4-stages.mlir --bitpipe-generate-backward=split --bitpipe-place="placement=loop devices=4 dp=2" --bitpipe-schedule="schedule=zb-h1 microbatches=4" --bitpipe-insert-allreduce | FileCheck %s --check-prefix=ZB
// ZB-LABEL: bitpipe.program @rank1 rank 1 {
// ZB:            weight_grad(%{{.*}}) stage 1 microbatch 3
// ZB-NEXT:       allreduce_start stages [1] group [1] bucket 0 grads ["h1.w"] bytes 256
// ZB-NEXT:       allreduce_wait
// ZB-NEXT:       optimizer_step microbatches 8
