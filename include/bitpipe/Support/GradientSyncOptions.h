//===- GradientSyncOptions.h - The gradient sync scheme as an option -*- C++
//-*-===//
//
// The values of an llvm::cl flag or an MLIR pass option of type
// sched::GradientSync, named as the schedule library names them
// (GradientSync.h), so that bitpipe-compile's and bitpipe-plan's flags, the
// passes' options, the IR attribute and the manifest spell them alike.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_GRADIENTSYNCOPTIONS_H
#define BITPIPE_SUPPORT_GRADIENTSYNCOPTIONS_H

#include "bitpipe/Schedule/GradientSync.h"

#include "llvm/Support/CommandLine.h"

namespace bitpipe {

inline llvm::cl::ValuesClass gradientSyncValues() {
  using llvm::cl::OptionEnumValue;
  using sched::GradientSync;
  return llvm::cl::ValuesClass{
      OptionEnumValue{sched::gradientSyncName(GradientSync::Flat),
                      static_cast<int>(GradientSync::Flat),
                      "one all-reduce over every replica of a stage"},
      OptionEnumValue{sched::gradientSyncName(GradientSync::Hierarchical),
                      static_cast<int>(GradientSync::Hierarchical),
                      "a stage held by several pipeline ranks: reduce-scatter "
                      "among them, all-reduce of the shards across copies, "
                      "all-gather (docs/data-parallel.md)"}};
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_GRADIENTSYNCOPTIONS_H
