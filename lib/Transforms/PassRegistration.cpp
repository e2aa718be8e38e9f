//===- PassRegistration.cpp - Anchor for the generated pass registry ------===//
//
// Each pass lives in its own file; this translation unit only makes sure the
// library is never empty.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Transforms/Passes.h"
