//===- NNDialect.td - The nn dialect ------------------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_NN_NNDIALECT_TD
#define BITPIPE_DIALECT_NN_NNDIALECT_TD

include "bitpipe/Dialect/NN/IR/NNKernelCalls.td"
include "mlir/IR/OpBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::bitpipe::nn";
  let summary = "Tensor-level transformer operations and their backward rules";
  let description = [{
    The op set of GPT- and BERT-style transformers at tensor level: embedding,
    layer_norm, linear, attention, gelu, add and cross_entropy, with verifiers
    and shape inference. Every forward op names its backward through
    `NN_BackwardOpInterface`.

    Discardable attributes that model IR carries (bitpipe-import writes
    them; the dialect verifies them; NNAttrNames.h names them):
      * on ops: `nn.layer` (the layer index, >= 0; the partitioner cuts only
        between layers) and `nn.cost` (`#nn.cost`,
        bitpipe-annotate-cost's numbers);
      * on functions: `nn.model` (`#nn.model`, the configuration);
      * on function arguments: `nn.param` (a parameter's name), `nn.init`
        (`#nn.init<normal, std = ...>`, `#nn.init<zeros>` or
        `#nn.init<ones>`) and `nn.input` ("tokens" or "labels").
  }];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;

  let extraClassDeclaration = [{
  private:
    void registerAttributes();

  public:
  }];
}

// Every op's tensors have element and byte counts that fit in int64
// (bitpipe/Support/BoundedTensors.h; docs/models.md, "Limits").
def NN_BoundedTensors : NativeOpTrait<"BoundedTensors"> {
  let cppNamespace = "::bitpipe";
}

// An nn op; `kernelCalls` are its runtime kernel calls where its lowering
// is uniform (NNKernelCalls.td).
class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits # [NN_BoundedTensors]> {
  list<NN_KernelCall> kernelCalls = [];
}

#endif // BITPIPE_DIALECT_NN_NNDIALECT_TD
