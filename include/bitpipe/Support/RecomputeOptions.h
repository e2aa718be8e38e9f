//===- RecomputeOptions.h - Recomputation as an option ----------*- C++ -*-===//
//
// The values of an llvm::cl flag or an MLIR pass option of type
// sched::Recompute, named as the schedule library names them
// (Recompute.h), so that bitpipe-compile's flag and the passes' options
// spell them alike.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_RECOMPUTEOPTIONS_H
#define BITPIPE_SUPPORT_RECOMPUTEOPTIONS_H

#include "bitpipe/Schedule/Recompute.h"

#include "llvm/Support/CommandLine.h"

namespace bitpipe {

inline llvm::cl::ValuesClass recomputeValues() {
  using llvm::cl::OptionEnumValue;
  using sched::Recompute;
  return llvm::cl::ValuesClass{
      OptionEnumValue{sched::recomputeName(Recompute::None),
                      static_cast<int>(Recompute::None),
                      "keep every value the backward reads, statistics too"},
      OptionEnumValue{sched::recomputeName(Recompute::Selective),
                      static_cast<int>(Recompute::Selective),
                      "keep the activations, compute the statistics again"},
      OptionEnumValue{sched::recomputeName(Recompute::Full),
                      static_cast<int>(Recompute::Full),
                      "keep the stage's inputs, run its forward again in "
                      "its backward"}};
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_RECOMPUTEOPTIONS_H
