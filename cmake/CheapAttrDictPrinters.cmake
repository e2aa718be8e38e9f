# Rewrites the printers of an -gen-op-defs file so that `attr-dict` does not
# build a dictionary of every attribute of the op it prints.
#
#   cmake -DINPUT=Ops.cpp.inc -DOUTPUT=OpsPrinters.cpp.inc -DHELPER=ns::fn
#         -P CheapAttrDictPrinters.cmake
#
# For an op whose attributes are properties, the printer that mlir-tblgen
# (LLVM 19) generates for `attr-dict` calls `(*this)->getAttrs()`, which
# materialises the properties into a new, uniqued DictionaryAttr, only to
# elide every entry that the format has already printed. Printing a
# 126-layer pipeline's rank programs (about 120,000 step ops, each printed
# twice: once to collect aliases, once to write) spent a fifth of its time
# there. HELPER (see bitpipe/Dialect/BitPipe/IR/AttrDictPrinting.h) prints
# the same attributes without the dictionary. The rewrite refuses an input in
# which it finds nothing to rewrite, or leaves a call behind, so that a change
# in the generator stops the build rather than silently undoing it.

foreach(var INPUT OUTPUT HELPER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "CheapAttrDictPrinters.cmake: -D${var}=... is required")
  endif()
endforeach()

file(READ "${INPUT}" text)

set(plain "_odsPrinter.printOptionalAttrDict((*this)->getAttrs(), elidedAttrs);")
set(keyword
  "_odsPrinter.printOptionalAttrDictWithKeyword((*this)->getAttrs(), elidedAttrs);")
string(FIND "${text}" "${plain}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "CheapAttrDictPrinters.cmake: ${INPUT} has no "
    "'${plain}': the generator's printers changed; update this rewrite")
endif()

string(REPLACE "${plain}"
  "${HELPER}(_odsPrinter, getOperation(), elidedAttrs, /*withKeyword=*/false);"
  text "${text}")
string(REPLACE "${keyword}"
  "${HELPER}(_odsPrinter, getOperation(), elidedAttrs, /*withKeyword=*/true);"
  text "${text}")

string(FIND "${text}" "(*this)->getAttrs(), elidedAttrs" left)
if(NOT left EQUAL -1)
  message(FATAL_ERROR "CheapAttrDictPrinters.cmake: ${INPUT} prints an "
    "attribute dictionary in a form this rewrite does not know")
endif()

# Written whole, then moved, so that an interrupted build leaves no half file.
file(WRITE "${OUTPUT}.tmp" "${text}")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
