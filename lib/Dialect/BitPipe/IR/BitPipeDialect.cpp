//===- BitPipeDialect.cpp - The bitpipe dialect -------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"

using namespace mlir;
using namespace bitpipe::bp;

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpsDialect.cpp.inc"

void BitPipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.cpp.inc"
      >();
}
