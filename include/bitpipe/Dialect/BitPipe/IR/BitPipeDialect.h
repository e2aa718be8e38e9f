//===- BitPipeDialect.h - The bitpipe dialect -------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_BITPIPEDIALECT_H
#define BITPIPE_DIALECT_BITPIPE_IR_BITPIPEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpsDialect.h.inc"

#endif // BITPIPE_DIALECT_BITPIPE_IR_BITPIPEDIALECT_H
