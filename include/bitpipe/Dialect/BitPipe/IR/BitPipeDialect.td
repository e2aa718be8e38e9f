//===- BitPipeDialect.td - The bitpipe dialect -------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPEDIALECT_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPEDIALECT_TD

include "mlir/IR/OpBase.td"

def BitPipe_Dialect : Dialect {
  let name = "bitpipe";
  let cppNamespace = "::bitpipe::bp";
  let summary = "Pipeline stages, placement and per-rank training programs";
  let description = [{
    Stages (chunks of the model), their placement on devices, and the
    per-rank programs of a pipeline-parallel training step: forward/backward
    of a stage for a micro-batch, send/recv, local copies, asynchronous
    gradient all-reduce (start/wait with tokens) and the optimizer step.
  }];
}

class BitPipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<BitPipe_Dialect, mnemonic, traits>;

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPEDIALECT_TD
