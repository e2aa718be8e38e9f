//===- BitPipeTypes.h - bitpipe types ---------------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_BITPIPETYPES_H
#define BITPIPE_DIALECT_BITPIPE_IR_BITPIPETYPES_H

#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpsTypes.h.inc"

#endif // BITPIPE_DIALECT_BITPIPE_IR_BITPIPETYPES_H
