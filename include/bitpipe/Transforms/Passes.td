//===- Passes.td - bitpipe passes ---------------------------*- tablegen -*-===//
//
// Every pass is prefixed `bitpipe-`, runs alone in bitpipe-opt and has its own
// lit test under test/Transforms/<pass-name>.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TRANSFORMS_PASSES_TD
#define BITPIPE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // BITPIPE_TRANSFORMS_PASSES_TD
