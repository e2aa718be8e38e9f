// RUN: bitpipe-opt %s --bitpipe-emit-entry-points | FileCheck %s

// A backward whose results 0 and 2 (of 3) are parameter gradients that
// bitpipe-lower-nn-to-runtime turned into trailing arguments: the entry
// passes the accumulators the runtime put in those results' slots
// (buffers[A + 0], buffers[A + 2]) and stores the one result left into
// its own slot (buffers[A + 1]). A = 2 arguments here.
module attributes {bitpipe.entry_points = {functions = [@bwd], ranks = [@bitpipe_rank0]}} {
  llvm.func @bwd(%saved: !llvm.ptr, %grad: !llvm.ptr, %acc0: !llvm.ptr, %acc2: !llvm.ptr) -> !llvm.ptr attributes {bitpipe.accumulated_results = array<i64: 0, 2>} {
    llvm.return %grad : !llvm.ptr
  }
  llvm.func @bitpipe_rank0(%ctx: !llvm.ptr) {
    llvm.return
  }
}

// CHECK-LABEL: llvm.func @bwd(
// CHECK-NOT:     bitpipe.accumulated_results
// CHECK-LABEL: llvm.func @bwd_entry(
// CHECK-SAME:      %[[BUF:.*]]: !llvm.ptr) {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr %[[BUF]][0]
// CHECK-NEXT:    %[[A0:.*]] = llvm.load %[[P0]]
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr %[[BUF]][1]
// CHECK-NEXT:    %[[A1:.*]] = llvm.load %[[P1]]
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr %[[BUF]][2]
// CHECK-NEXT:    %[[ACC0:.*]] = llvm.load %[[P2]]
// CHECK-NEXT:    %[[P4:.*]] = llvm.getelementptr %[[BUF]][4]
// CHECK-NEXT:    %[[ACC2:.*]] = llvm.load %[[P4]]
// CHECK-NEXT:    %[[R:.*]] = llvm.call @bwd(%[[A0]], %[[A1]], %[[ACC0]], %[[ACC2]])
// CHECK-NEXT:    %[[P3:.*]] = llvm.getelementptr %[[BUF]][3]
// CHECK-NEXT:    llvm.store %[[R]], %[[P3]]
// CHECK-NEXT:    llvm.return
