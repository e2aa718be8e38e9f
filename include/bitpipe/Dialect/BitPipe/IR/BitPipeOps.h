//===- BitPipeOps.h - bitpipe operations ------------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H
#define BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h.inc"

#endif // BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H
