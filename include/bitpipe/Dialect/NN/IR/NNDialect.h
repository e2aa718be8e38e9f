//===- NNDialect.h - The nn dialect -----------------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_NN_IR_NNDIALECT_H
#define BITPIPE_DIALECT_NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "bitpipe/Dialect/NN/IR/NNOpsDialect.h.inc"

#include "bitpipe/Dialect/NN/IR/NNAttrs.h"

#endif // BITPIPE_DIALECT_NN_IR_NNDIALECT_H
