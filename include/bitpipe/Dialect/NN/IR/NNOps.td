//===- NNOps.td - nn operations -----------------------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_NN_NNOPS_TD
#define BITPIPE_DIALECT_NN_NNOPS_TD

include "bitpipe/Dialect/NN/IR/NNDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

#endif // BITPIPE_DIALECT_NN_NNOPS_TD
