//===- BitPipeTypes.td - bitpipe types ---------------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPETYPES_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPETYPES_TD

include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.td"
include "mlir/IR/AttrTypeBase.td"

class BitPipe_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<BitPipe_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def BitPipe_TokenType : BitPipe_Type<"Token", "token"> {
  let summary = "completion of asynchronous work";
  let description = [{
    Produced by `bitpipe.allreduce_start`, consumed by exactly one
    `bitpipe.allreduce_wait`. Like IREE's `!stream.timepoint`, it orders
    asynchronous work without blocking the program that started it.

    ```mlir
    %t = bitpipe.allreduce_start stages [0] group [0, 1] bucket 0 : !bitpipe.token
    ```
  }];
}

def BitPipe_SavedType : BitPipe_Type<"Saved", "saved"> {
  let summary = "what a stage's forward keeps for its backward";
  let description = [{
    An opaque handle to the activations a `bitpipe.forward` keeps alive until
    the matching `bitpipe.backward` (and `bitpipe.weight_grad`, for a split
    backward) consumes them. Its live range is the activation memory of one
    micro-batch of one stage.

    ```mlir
    %y, %saved = bitpipe.forward @stage_0(%x) stage 0 microbatch 0
        : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    ```
  }];
}

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPETYPES_TD
