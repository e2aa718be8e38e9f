//===- BitPipeTypes.cpp - bitpipe types -----------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::bp;

#define GET_TYPEDEF_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpsTypes.cpp.inc"

void BitPipeDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpsTypes.cpp.inc"
      >();
}
