//===- NNKernelCalls.td - How an nn op calls the kernels ---*- tablegen -*-===//
//
// An nn op whose lowering is uniform states its kernel calls in its own
// definition, `let kernelCalls = [NN_KernelCall<...>, ...]`, and
// bitpipe-tblgen -gen-nn-kernel-lowerings writes its pattern of
// bitpipe-lower-nn-to-runtime from that. The pattern
//  1. gives every result its buffer, in result order: a `result` a fresh
//     one, a `grad_acc` the buffer its kernel accumulates into (the rank's
//     accumulator, an argument, where the function returns the gradient;
//     else zeroed, or that of the parameter gradient it is summed with:
//     GradientSumPlan in lib/Conversion/NNToRuntime/Lowering.h);
//  2. allocates the `scratch` buffers, in order;
//  3. emits the calls in order, each one's arguments in order;
//  4. replaces the op with its results' buffers.
// Every argument is checked against the role of the kernel parameter it
// fills (runtime/include/bitpipe/abi/KernelRoles.h) when the generator
// runs: a call that does not fit its kernel fails the build, naming the op,
// the kernel and the parameter. The ops whose lowering is not uniform
// (attention, the parameter-gradient sums of nn.add, the fused epilogues)
// have hand-written patterns, and say why. docs/adding-an-op.md walks
// through an op.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_NNKERNELCALLS_TD
#define BITPIPE_DIALECT_NN_NNKERNELCALLS_TD

// One call of the kernel bp_<kernel> (its name in Kernels.h's BP_KERNELS)
// with `arguments`, a (call ...) dag of one form below per kernel parameter,
// in the kernel's order. Where `variantIf` (C++ on the op, `$_op`) holds,
// bp_<variant> is called instead, with the same arguments: its parameters
// must have the kernel's roles. With `emitIf` (C++ on the op), the call is
// made only where it holds (a backward's recomputation of statistics that
// the op was not given).
class NN_KernelCall<string kernelName, dag arguments, code condition = "",
                    string alternative = "", code onlyIf = ""> {
  string kernel = kernelName;
  dag args = arguments;
  code variantIf = condition;
  string variant = alternative;
  code emitIf = onlyIf;
}

// The operator of a call's argument list.
def call;

// Buffers.
//   (operand $x)   the buffer of operand x; an Optional operand that is
//                  absent is NULL (for a *_OPT parameter only).
//   (result $x)    the fresh buffer of result x.
//   (grad_acc $x)  the buffer that parameter-gradient result x accumulates
//                  in (float64 on the CPU when it is the rank's: the
//                  kernel's _g64 form is called); an Optional one that is
//                  absent is NULL.
//   (scratch sizes...):$name  a fresh f32 buffer of those sizes that only
//                  the op's calls use (a statistic the nn op does not
//                  return, or a loss it discards); a later argument `$name`
//                  is the same buffer. An unnamed one in a call under
//                  emitIf is allocated only when that call is made.
//   (stat $x, i, sizes...):$name  statistic i of the variadic result or
//                  operand $x (the statistics a forward op returns for its
//                  backward, or a backward op reads) when the op has them,
//                  else a fresh f32 scratch buffer of those sizes; a later
//                  `$name` is the same buffer.
def operand;
def result;
def grad_acc;
def scratch;
def stat;

// Sizes, i64 (DIM parameters), of an operand or a result x.
//   (rows $x)      elements / last dimension: N of the [N, features] view
//   (last_dim $x)  the last dimension
//   (dim $x, i)    dimension i
//   (numel $x)     the element count
//   (i64 "code")   C++ on the op (`$_op`)
def rows;
def last_dim;
def dim;
def numel;
def i64;

// Scalars.
//   (f32 $attr), (f32 "code")  SCALAR: a float attribute's value, or C++
//   (i32 $attr), (i32 "code")  INT: an integer attribute's value, or C++
def f32;
def i32;

#endif // BITPIPE_DIALECT_NN_NNKERNELCALLS_TD
