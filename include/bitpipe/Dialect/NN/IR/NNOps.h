//===- NNOps.h - nn operations ----------------------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_NN_IR_NNOPS_H
#define BITPIPE_DIALECT_NN_IR_NNOPS_H

#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "bitpipe/Support/BoundedTensors.h"

#define GET_OP_CLASSES
#include "bitpipe/Dialect/NN/IR/NNOps.h.inc"

#endif // BITPIPE_DIALECT_NN_IR_NNOPS_H
