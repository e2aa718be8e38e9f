//===- EntryPoints.h - Stage entries and program.h's tables -----*- C++ -*-===//

#ifndef BITPIPE_CONVERSION_ENTRYPOINTS_ENTRYPOINTS_H
#define BITPIPE_CONVERSION_ENTRYPOINTS_ENTRYPOINTS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace bitpipe {

#define GEN_PASS_DECL_EMITENTRYPOINTS
#include "bitpipe/Conversion/Passes.h.inc"

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_ENTRYPOINTS_ENTRYPOINTS_H
