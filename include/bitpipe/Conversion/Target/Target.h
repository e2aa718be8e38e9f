//===- Target.h - What a program is compiled for ----------------*- C++ -*-===//
//
// The target (which runtime library the executable links) and the precision
// (the element type of activations, their gradients and the weight copies
// the stage functions read), declared once: the options of the lowering
// passes (bitpipe-lower-nn-to-runtime{precision=...},
// bitpipe-lower-program-to-runtime{target=... precision=...}) and
// bitpipe-compile's --target / --precision take these enums with these
// names, and the manifest records them (program.h's "target"). The words
// are those of bitpipe/abi/ManifestKeys.def (Target.cpp checks that the
// numbering agrees with program.h's bp_target_kind and bp_precision).
// docs/architecture.md, "Targets and precision".
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_CONVERSION_TARGET_TARGET_H
#define BITPIPE_CONVERSION_TARGET_TARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace bitpipe {

/// The runtime library the stage functions are linked with.
enum class TargetKind { CPU, CUDA };

/// The element type of activations, activation gradients and weight copies.
/// Parameter gradients, statistics and the loss are f32 in both.
enum class Precision { FP32, BF16 };

/// "cpu" | "cuda", the manifest's BP_TARGET_KIND words.
llvm::StringRef stringifyTargetKind(TargetKind kind);
/// "fp32" | "bf16", the manifest's BP_PRECISION words.
llvm::StringRef stringifyPrecision(Precision precision);

/// The values of an llvm::cl / pass option of type TargetKind or Precision,
/// spelled as above.
llvm::cl::ValuesClass targetKindValues();
llvm::cl::ValuesClass precisionValues();

/// The precision a target trains in when none is asked for: bf16 on cuda
/// (mixed precision, as PyTorch AMP), fp32 on cpu.
Precision defaultPrecision(TargetKind kind);

/// Whether \p kind's runtime has kernels for \p precision: the CPU runtime
/// is fp32 only.
bool supportsPrecision(TargetKind kind, Precision precision);

/// The bit width of \p kind's parameter-gradient accumulators, into which
/// the stage functions' gradient kernels add in place: 64 on the CPU (the
/// float64 sums that make every schedule's gradients the same bits,
/// docs/training-semantics.md), 32 on CUDA. The manifest states it as the
/// dtype of a backward's "param" results, and the runtime's parameter
/// arrays hold the same (docs/runtime-abi.md, "Parameter gradients").
unsigned gradientAccumulatorBits(TargetKind kind);

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_TARGET_TARGET_H
