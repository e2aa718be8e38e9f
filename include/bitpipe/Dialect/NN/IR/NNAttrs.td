//===- NNAttrs.td - nn attributes --------------------------*- tablegen -*-===//
//
// The typed values of the discardable attributes model IR carries
// (NNAttrNames.h names them; the dialect verifies where each may appear).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_NNATTRS_TD
#define BITPIPE_DIALECT_NN_NNATTRS_TD

include "bitpipe/Dialect/NN/IR/NNDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class NN_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<NN_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// nn.cost
//===----------------------------------------------------------------------===//

def NN_CostAttr : NN_Attr<"Cost", "cost"> {
  let summary = "what one forward op costs, per micro-batch";
  let description = [{
    bitpipe-annotate-cost's numbers for one nn forward op (CostModel.h says
    what each counts): forward and backward FLOPs, the bytes of the
    parameters it reads and of the activations its backward keeps.

    ```mlir
    nn.gelu %h {nn.cost = #nn.cost<fwd_flops = 512, bwd_flops = 1024,
                                   param_bytes = 0, act_bytes = 256>} ...
    ```
  }];
  let parameters = (ins "int64_t":$fwd_flops, "int64_t":$bwd_flops,
                        "int64_t":$param_bytes, "int64_t":$act_bytes);
  // `<key = value, ...>` in any order; a missing, unknown or repeated field
  // is named (NNAttrs.cpp: AttrFieldParser).
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// nn.model
//===----------------------------------------------------------------------===//

// Where a GPT/BERT layer's layer norms sit (docs/models.md): in front of each
// sublayer with a final norm, or after each residual add with one after the
// embeddings. The importer's NormPosition (ModelConfig.h) becomes this.
def NN_NormPosition : I32EnumAttr<"NormPosition",
                                  "where a layer's layer norms sit", [
      I32EnumAttrCase<"Pre", 0, "pre">,
      I32EnumAttrCase<"Post", 1, "post">,
    ]> {
  let cppNamespace = "::bitpipe::nn";
  let genSpecializedAttr = 0;
}

def NN_ModelAttr : NN_Attr<"Model", "model"> {
  let summary = "the configuration a model function was built from";
  let description = [{
    On the model function (bitpipe-import): the hyper-parameters the
    partitioner, the cost summary and the runtime's manifest read. `family`
    is the importer's model family ("gpt", "bert"); the runtime decides
    what it supports. `norm_position` (optional, `pre` when absent) says
    where the layer norms sit; only a BERT may be `post`.

    ```mlir
    func.func @gpt(...) attributes {nn.model = #nn.model<family = "gpt",
        layers = 4, hidden = 64, heads = 4, vocab = 256, max_positions = 64,
        seq_len = 32, microbatch_size = 4>}
    func.func @bert(...) attributes {nn.model = #nn.model<family = "bert",
        ..., microbatch_size = 4, norm_position = post>}
    ```
  }];
  let parameters = (ins StringRefParameter<"model family">:$family,
                        "int64_t":$layers, "int64_t":$hidden,
                        "int64_t":$heads, "int64_t":$vocab,
                        "int64_t":$max_positions, "int64_t":$seq_len,
                        "int64_t":$microbatch_size,
                        EnumParameter<NN_NormPosition>:$norm_position);
  // As #nn.cost: fields in any order, a missing one named.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// nn.gelu's form
//===----------------------------------------------------------------------===//

// Which GELU: the tanh approximation (GPT-2's gelu_new) or the exact one
// with erf (the original BERT's "gelu"). Checkpoints trained with one do not
// load into the other unchanged, so the importer keeps the config's.
def NN_GeluForm : I32EnumAttr<"GeluForm", "which GELU an nn.gelu computes", [
      I32EnumAttrCase<"Tanh", 0, "tanh">,
      I32EnumAttrCase<"Erf", 1, "erf">,
    ]> {
  let cppNamespace = "::bitpipe::nn";
}

//===----------------------------------------------------------------------===//
// nn.init
//===----------------------------------------------------------------------===//

def NN_InitKind : I32EnumAttr<"InitKind", "how a parameter starts", [
      I32EnumAttrCase<"Normal", 0, "normal">,
      I32EnumAttrCase<"Zeros", 1, "zeros">,
      I32EnumAttrCase<"Ones", 2, "ones">,
    ]> {
  let cppNamespace = "::bitpipe::nn";
  let genSpecializedAttr = 0;
}

// A double (held as an APFloat, which storage keys can hash), printed so
// that it reads back bit for bit.
def NN_StdParameter
    : OptionalParameter<"std::optional<::llvm::APFloat>",
                        "standard deviation of a normal initialiser"> {
  let parser = "::bitpipe::nn::parseStd($_parser)";
  let printer = "$_printer.printFloat(*$_self)";
}

def NN_InitAttr : NN_Attr<"Init", "init"> {
  let summary = "how a parameter argument is initialised";
  let description = [{
    On every `nn.param` argument of model IR: `normal` (mean 0, standard
    deviation `std`, which it needs), `zeros` or `ones` (no `std`). The
    runtime initialises the parameter so (DESIGN.md: normal(0, 0.02) for
    weights, scaled for residual projections; zero biases; unit gains).

    ```mlir
    tensor<256x64xf32> {nn.init = #nn.init<normal, std = 2.000000e-02>,
                        nn.param = "embed.tokens"}
    tensor<64xf32> {nn.init = #nn.init<ones>, nn.param = "ln.weight"}
    ```
  }];
  let parameters = (ins EnumParameter<NN_InitKind>:$kind,
                        NN_StdParameter:$std);
  let assemblyFormat = "`<` $kind (`,` `std` `=` $std^)? `>`";
  let genVerifyDecl = 1;

  let builders = [
    AttrBuilder<(ins "InitKind":$kind, "std::optional<double>":$stdDev), [{
      std::optional<::llvm::APFloat> std;
      if (stdDev)
        std = ::llvm::APFloat(*stdDev);
      return $_get($_ctxt, kind, std);
    }]>,
  ];

  let extraClassDeclaration = [{
    /// The standard deviation of a normal initialiser, as a double.
    std::optional<double> getStdDev() const {
      if (std::optional<::llvm::APFloat> std = getStd())
        return std->convertToDouble();
      return std::nullopt;
    }
  }];
}

//===----------------------------------------------------------------------===//
// nn.dropout
//===----------------------------------------------------------------------===//

// A probability as an fp32 APFloat: the kernels take fp32, and the mask is
// defined on the fp32 value (docs/training-semantics.md, "Dropout").
def NN_ProbabilityParameter
    : AttrParameter<"::llvm::APFloat", "a dropout probability"> {
  let parser = "::bitpipe::nn::parseProbability($_parser)";
  let printer = "$_printer.printFloat($_self)";
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
}

def NN_DropoutAttr : NN_Attr<"Dropout", "dropout"> {
  let summary = "one dropout site: its probability and its number";
  let description = [{
    What nn.dropout and a dropping nn.attention need to draw their mask:
    the probability p of dropping an element, in (0, 1), and the site, the
    model's number for this dropout (docs/training-semantics.md, "Dropout":
    0 for the embeddings', 3l + 1, 3l + 2, 3l + 3 for layer l's), below
    2^24. Two sites of one model must differ, or their masks would be the
    same; a backward op reuses its forward's site, and so its mask.

    ```mlir
    #nn.dropout<1.000000e-01, site = 2>
    ```
  }];
  let parameters = (ins NN_ProbabilityParameter:$probability,
                        "int64_t":$site);
  let assemblyFormat = "`<` $probability `,` `site` `=` $site `>`";
  let genVerifyDecl = 1;

  let builders = [
    AttrBuilder<(ins "float":$p, "int64_t":$site), [{
      return $_get($_ctxt, ::llvm::APFloat(p), site);
    }]>,
  ];

  let extraClassDeclaration = [{
    /// The probability as the kernels take it.
    float getP() const { return getProbability().convertToFloat(); }
  }];
}

#endif // BITPIPE_DIALECT_NN_NNATTRS_TD
