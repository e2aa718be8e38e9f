//===- BitPipeOps.h - bitpipe operations ------------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H
#define BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#define GET_OP_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h.inc"

#endif // BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H
