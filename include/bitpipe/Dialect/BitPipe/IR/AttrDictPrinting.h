//===- AttrDictPrinting.h - attr-dict without a dictionary ------*- C++ -*-===//
//
// The generated printers of the bitpipe ops call this for their `attr-dict`
// (cmake/CheapAttrDictPrinters.cmake rewrites them to), so that printing a
// step op does not materialise its properties into a new DictionaryAttr.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_ATTRDICTPRINTING_H
#define BITPIPE_DIALECT_BITPIPE_IR_ATTRDICTPRINTING_H

#include "mlir/IR/OpImplementation.h"

namespace bitpipe::bp {

/// Prints what `printOptionalAttrDict(op->getAttrs(), elided)` (or its
/// WithKeyword form) prints: every attribute of \p op not in \p elided, in
/// the same order. When the format prints each inherent attribute itself
/// (every name in \p elided), only the discardable attributes are left and
/// are read as they are stored; otherwise it takes the general path.
void printAttrDictNotInFormat(mlir::OpAsmPrinter &printer, mlir::Operation *op,
                              llvm::ArrayRef<llvm::StringRef> elided,
                              bool withKeyword);

} // namespace bitpipe::bp

#endif // BITPIPE_DIALECT_BITPIPE_IR_ATTRDICTPRINTING_H
