//===- BitPipeEnums.td - bitpipe enums ---------------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPEENUMS_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPEENUMS_TD

include "mlir/IR/EnumAttr.td"

def BitPipe_TransferKind : I32EnumAttr<"TransferKind",
    "what a point-to-point transfer carries", [
      I32EnumAttrCase<"Activation", 0, "activation">,
      I32EnumAttrCase<"Gradient", 1, "gradient">,
    ]> {
  let cppNamespace = "::bitpipe::bp";
  // The attribute wrapper is BitPipe_TransferKindAttr (BitPipeAttrs.td).
  let genSpecializedAttr = 0;
}

def BitPipe_InputKind : I32EnumAttr<"InputKind",
    "which part of a micro-batch of training data", [
      I32EnumAttrCase<"Tokens", 0, "tokens">,
      I32EnumAttrCase<"Targets", 1, "targets">,
    ]> {
  let cppNamespace = "::bitpipe::bp";
  let genSpecializedAttr = 0;
}

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPEENUMS_TD
