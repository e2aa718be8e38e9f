//===- BitPipeOps.td - bitpipe operations -------------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPEOPS_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPEOPS_TD

include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPEOPS_TD
