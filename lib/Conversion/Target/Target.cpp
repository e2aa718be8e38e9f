//===- Target.cpp - The target and precision names ------------------------===//
//
// The names come from program.h's tables (built from ManifestKeys.def), so
// that the flags, the pass options and the manifest spell them alike.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/Target/Target.h"

#include "bitpipe/program.h"

using namespace bitpipe;

static_assert(static_cast<int>(TargetKind::CPU) == BP_TARGET_CPU &&
                  static_cast<int>(TargetKind::CUDA) == BP_TARGET_CUDA &&
                  BP_NUM_TARGET_KINDS == 2,
              "TargetKind must number the targets as program.h does");
static_assert(static_cast<int>(Precision::FP32) == BP_PRECISION_FP32 &&
                  static_cast<int>(Precision::BF16) == BP_PRECISION_BF16 &&
                  BP_NUM_PRECISIONS == 2,
              "Precision must number the precisions as program.h does");

llvm::StringRef bitpipe::stringifyTargetKind(TargetKind kind) {
  return bp_target_kind_names[static_cast<int>(kind)];
}

llvm::StringRef bitpipe::stringifyPrecision(Precision precision) {
  return bp_precision_names[static_cast<int>(precision)];
}

llvm::cl::ValuesClass bitpipe::targetKindValues() {
  using llvm::cl::OptionEnumValue;
  return llvm::cl::ValuesClass{
      OptionEnumValue{stringifyTargetKind(TargetKind::CPU),
                      static_cast<int>(TargetKind::CPU),
                      "the CPU runtime (MPI, OpenBLAS)"},
      OptionEnumValue{stringifyTargetKind(TargetKind::CUDA),
                      static_cast<int>(TargetKind::CUDA),
                      "the CUDA runtime (one GPU per rank: cuBLASLt, cuDNN)"}};
}

llvm::cl::ValuesClass bitpipe::precisionValues() {
  using llvm::cl::OptionEnumValue;
  return llvm::cl::ValuesClass{
      OptionEnumValue{stringifyPrecision(Precision::FP32),
                      static_cast<int>(Precision::FP32), "fp32 everywhere"},
      OptionEnumValue{stringifyPrecision(Precision::BF16),
                      static_cast<int>(Precision::BF16),
                      "bf16 activations, their gradients and weight copies; "
                      "fp32 parameter gradients, statistics and loss (cuda "
                      "only)"}};
}

Precision bitpipe::defaultPrecision(TargetKind kind) {
  return kind == TargetKind::CUDA ? Precision::BF16 : Precision::FP32;
}

bool bitpipe::supportsPrecision(TargetKind kind, Precision precision) {
  return kind == TargetKind::CUDA || precision == Precision::FP32;
}

unsigned bitpipe::gradientAccumulatorBits(TargetKind kind) {
  return kind == TargetKind::CPU ? 64 : 32;
}
