//===- AttrDictPrinting.cpp - `attr-dict` without a dictionary per op -----===//

#include "bitpipe/Dialect/BitPipe/IR/AttrDictPrinting.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

void bitpipe::bp::printAttrDictNotInFormat(OpAsmPrinter &printer, Operation *op,
                                           ArrayRef<StringRef> elided,
                                           bool withKeyword) {
  auto print = [&](ArrayRef<NamedAttribute> attrs) {
    if (withKeyword)
      printer.printOptionalAttrDictWithKeyword(attrs, elided);
    else
      printer.printOptionalAttrDict(attrs, elided);
  };
  // An inherent attribute that the format leaves to `attr-dict` must come
  // from the properties: the general path, which builds the dictionary.
  bool formatPrintsInherent =
      llvm::all_of(op->getName().getAttributeNames(), [&](StringAttr name) {
        return llvm::is_contained(elided, name.getValue());
      });
  if (!formatPrintsInherent)
    return print(op->getAttrs());
  // Both are sorted by name, so the remaining entries print in the order
  // the whole dictionary would have printed them.
  SmallVector<NamedAttribute, 4> discardable(op->getDiscardableAttrs());
  print(discardable);
}
