//===- BitPipeOps.cpp - bitpipe operations: verifiers ---------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace bitpipe::bp;

#define GET_OP_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.cpp.inc"
