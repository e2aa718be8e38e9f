//===- Passes.h - bitpipe conversion passes ---------------------*- C++ -*-===//

#ifndef BITPIPE_CONVERSION_PASSES_H
#define BITPIPE_CONVERSION_PASSES_H

#include "bitpipe/Conversion/EntryPoints/EntryPoints.h"
#include "bitpipe/Conversion/LowerToLLVM/LowerToLLVM.h"
#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"
#include "bitpipe/Conversion/NNToRuntime/NNToRuntime.h"
#include "bitpipe/Conversion/ProgramToRuntime/ProgramToRuntime.h"

namespace bitpipe {

#define GEN_PASS_REGISTRATION
#include "bitpipe/Conversion/Passes.h.inc"

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_PASSES_H
