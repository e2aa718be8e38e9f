//===- NNDialect.cpp - The nn dialect -------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace bitpipe::nn;

#include "bitpipe/Dialect/NN/IR/NNOpsDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "bitpipe/Dialect/NN/IR/NNOps.cpp.inc"
      >();
}

#include "bitpipe/Dialect/NN/IR/NNInterfaces.cpp.inc"
