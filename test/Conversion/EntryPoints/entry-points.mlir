// RUN: bitpipe-opt %s --bitpipe-emit-entry-points | FileCheck %s
// RUN: bitpipe-opt %s --bitpipe-emit-entry-points | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// Stage functions as bitpipe-lower-to-llvm leaves them (bare pointers): one
// result, several (a struct), none; and one rank program.
module attributes {bitpipe.entry_points = {functions = [@one, @two, @none], ranks = [@bitpipe_rank0]}} {
  llvm.func @one(%a: !llvm.ptr, %b: !llvm.ptr) -> !llvm.ptr {
    llvm.return %a : !llvm.ptr
  }
  llvm.func @two(%a: !llvm.ptr) -> !llvm.struct<(ptr, ptr)> {
    %0 = llvm.mlir.undef : !llvm.struct<(ptr, ptr)>
    %1 = llvm.insertvalue %a, %0[0] : !llvm.struct<(ptr, ptr)>
    %2 = llvm.insertvalue %a, %1[1] : !llvm.struct<(ptr, ptr)>
    llvm.return %2 : !llvm.struct<(ptr, ptr)>
  }
  llvm.func @none(%a: !llvm.ptr) {
    llvm.return
  }
  llvm.func @bitpipe_rank0(%ctx: !llvm.ptr) {
    llvm.return
  }
}

// The attribute is consumed.
// CHECK-NOT: bitpipe.entry_points

// A arguments from buffers[0 .. A-1], results into buffers[A ..].
// CHECK-LABEL: llvm.func @one_entry(
// CHECK-SAME:      %[[BUF:.*]]: !llvm.ptr) {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr %[[BUF]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr %[[BUF]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[R:.*]] = llvm.call @one(%[[A0]], %[[A1]]) : (!llvm.ptr, !llvm.ptr) -> !llvm.ptr
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr %[[BUF]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[R]], %[[P2]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.return

// CHECK-LABEL: llvm.func @two_entry(
// CHECK-SAME:      %[[BUF:.*]]: !llvm.ptr) {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr %[[BUF]][0]
// CHECK-NEXT:    %[[A0:.*]] = llvm.load %[[P0]]
// CHECK-NEXT:    %[[R:.*]] = llvm.call @two(%[[A0]]) : (!llvm.ptr) -> !llvm.struct<(ptr, ptr)>
// CHECK-NEXT:    %[[R0:.*]] = llvm.extractvalue %[[R]][0]
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr %[[BUF]][1]
// CHECK-NEXT:    llvm.store %[[R0]], %[[P1]]
// CHECK-NEXT:    %[[R1:.*]] = llvm.extractvalue %[[R]][1]
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr %[[BUF]][2]
// CHECK-NEXT:    llvm.store %[[R1]], %[[P2]]
// CHECK-NEXT:    llvm.return

// CHECK-LABEL: llvm.func @none_entry(
// CHECK:         llvm.call @none(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return

// The tables, in the attribute's order.
// CHECK-LABEL: llvm.mlir.global external constant @bitpipe_stage_entries() {addr_space = 0 : i32} : !llvm.array<3 x ptr> {
// CHECK:         %[[E0:.*]] = llvm.mlir.addressof @one_entry : !llvm.ptr
// CHECK:         llvm.insertvalue %[[E0]], %{{.*}}[0] : !llvm.array<3 x ptr>
// CHECK:         %[[E1:.*]] = llvm.mlir.addressof @two_entry : !llvm.ptr
// CHECK:         llvm.insertvalue %[[E1]], %{{.*}}[1] : !llvm.array<3 x ptr>
// CHECK:         %[[E2:.*]] = llvm.mlir.addressof @none_entry : !llvm.ptr
// CHECK:         %[[T:.*]] = llvm.insertvalue %[[E2]], %{{.*}}[2] : !llvm.array<3 x ptr>
// CHECK:         llvm.return %[[T]] : !llvm.array<3 x ptr>
// CHECK:       llvm.mlir.global external constant @bitpipe_num_stage_entries(3 : i32) {addr_space = 0 : i32} : i32
// CHECK-LABEL: llvm.mlir.global external constant @bitpipe_rank_programs() {addr_space = 0 : i32} : !llvm.array<1 x ptr> {
// CHECK:         llvm.mlir.addressof @bitpipe_rank0 : !llvm.ptr
// CHECK:       llvm.mlir.global external constant @bitpipe_num_ranks(1 : i32) {addr_space = 0 : i32} : i32

// As program.h declares them: void (*)(void **) entries, constant tables.
// LLVMIR-DAG: @bitpipe_stage_entries = constant [3 x ptr] [ptr @one_entry, ptr @two_entry, ptr @none_entry]
// LLVMIR-DAG: @bitpipe_num_stage_entries = constant i32 3
// LLVMIR-DAG: @bitpipe_rank_programs = constant [1 x ptr] [ptr @bitpipe_rank0]
// LLVMIR-DAG: @bitpipe_num_ranks = constant i32 1
// LLVMIR-DAG: define void @two_entry(ptr %0)
