//===- NNOps.cpp - nn operations: verifiers and shape inference -----------===//

#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace bitpipe::nn;

#define GET_OP_CLASSES
#include "bitpipe/Dialect/NN/IR/NNOps.cpp.inc"
