//===- PartitionUnitsOptions.h - Partition units as an option ---*- C++ -*-===//
//
// The values of an llvm::cl flag of type sched::PartitionUnits, named as
// the schedule library names them (Partition.h), so that bitpipe-import's,
// bitpipe-compile's and bitpipe-plan's --units spell them alike.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_PARTITIONUNITSOPTIONS_H
#define BITPIPE_SUPPORT_PARTITIONUNITSOPTIONS_H

#include "bitpipe/Schedule/Partition.h"

#include "llvm/Support/CommandLine.h"

namespace bitpipe {

inline llvm::cl::ValuesClass partitionUnitsValues() {
  using llvm::cl::OptionEnumValue;
  using sched::PartitionUnits;
  return llvm::cl::ValuesClass{
      OptionEnumValue{sched::partitionUnitsName(PartitionUnits::Layers),
                      static_cast<int>(PartitionUnits::Layers),
                      "whole transformer layers"},
      OptionEnumValue{sched::partitionUnitsName(PartitionUnits::Halves),
                      static_cast<int>(PartitionUnits::Halves),
                      "each layer's attention and MLP halves"}};
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_PARTITIONUNITSOPTIONS_H
