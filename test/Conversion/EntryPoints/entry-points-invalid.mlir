// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-emit-entry-points -o /dev/null

// expected-error @+1 {{has no 'bitpipe.entry_points'; run bitpipe-lower-program-to-runtime first}}
module {
}

// -----

// expected-error @+1 {{has no list 'ranks' in 'bitpipe.entry_points'}}
module attributes {bitpipe.entry_points = {functions = []}} {
}

// -----

// expected-error @+1 {{lists @missing in 'bitpipe.entry_points' functions, which is not an llvm.func with a body; expected the module lowered by bitpipe-lower-to-llvm}}
module attributes {bitpipe.entry_points = {functions = [@missing], ranks = []}} {
}

// -----

// Still on tensors: not lowered.
// expected-error @+1 {{lists @f in 'bitpipe.entry_points' functions, which is not an llvm.func with a body}}
module attributes {bitpipe.entry_points = {functions = [@f], ranks = []}} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module attributes {bitpipe.entry_points = {functions = [@f], ranks = []}} {
  // expected-error @+1 {{has type '!llvm.func<ptr (ptr, i64)>'; expected pointer arguments and a pointer, a struct of pointers or nothing as result (a stage function lowered by bitpipe-lower-to-llvm)}}
  llvm.func @f(%a: !llvm.ptr, %n: i64) -> !llvm.ptr {
    llvm.return %a : !llvm.ptr
  }
}

// -----

module attributes {bitpipe.entry_points = {functions = [@f], ranks = []}} {
  // expected-error @+1 {{needs the entry @f_entry, but the module already has a symbol of that name}}
  llvm.func @f(%a: !llvm.ptr) {
    llvm.return
  }
  llvm.func @f_entry(%a: !llvm.ptr) {
    llvm.return
  }
}

// -----

module attributes {bitpipe.entry_points = {functions = [], ranks = [@r]}} {
  // expected-error @+1 {{has type '!llvm.func<void (ptr, i32)>'; expected a rank program, !llvm.func<void (ptr)>}}
  llvm.func @r(%ctx: !llvm.ptr, %x: i32) {
    llvm.return
  }
}

// -----

// A list of accumulated results that the signature cannot hold: result 3
// of a function with 1 result and 1 trailing argument.
module attributes {bitpipe.entry_points = {functions = [@f], ranks = []}} {
  // expected-error @+1 {{has bitpipe.accumulated_results = array<i64: 3>; expected increasing indices of results that became trailing arguments}}
  llvm.func @f(%a: !llvm.ptr, %acc: !llvm.ptr) -> !llvm.ptr attributes {bitpipe.accumulated_results = array<i64: 3>} {
    llvm.return %a : !llvm.ptr
  }
}
