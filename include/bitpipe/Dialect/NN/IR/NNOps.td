//===- NNOps.td - nn forward operations ---------------------*- tablegen -*-===//
//
// The forward op set of GPT- and BERT-style transformers. Layouts follow
// PyTorch: activations are [batch, seq, features], a linear weight is
// [out, in].
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_NNOPS_TD
#define BITPIPE_DIALECT_NN_NNOPS_TD

include "bitpipe/Dialect/NN/IR/NNDialect.td"
include "bitpipe/Dialect/NN/IR/NNInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NN_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def NN_IndexTensor : RankedTensorOf<[I32, I64]>;
def NN_Scalar : 0DTensorOf<[F32]>;

// A forward op: pure, with its result type inferred from its operands, a
// backward rule and a cost.
class NN_ForwardOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, traits # [
        Pure, InferTypeOpAdaptor,
        DeclareOpInterfaceMethods<NN_BackwardOpInterface,
                                  ["getBackwardOpNames"]>,
        DeclareOpInterfaceMethods<NN_CostOpInterface>]> {
  let hasVerifier = 1;
}

def NN_EmbeddingOp : NN_ForwardOp<"embedding"> {
  let summary = "token embedding plus learned position embedding";
  let description = [{
    `result[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]`. Token ids index the
    rows of `wte` ([vocab, hidden]); positions 0..T-1 index the rows of `wpe`
    ([max_positions, hidden]), so T must not exceed max_positions.

    ```mlir
    %x = nn.embedding %tokens, %wte, %wpe
        : (tensor<4x64xi32>, tensor<512x32xf32>, tensor<64x32xf32>) -> tensor<4x64x32xf32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$tokens, NN_FloatTensor:$wte,
                       NN_FloatTensor:$wpe);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $wte `,` $wpe attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LayerNormOp : NN_ForwardOp<"layer_norm"> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta`, statistics over the
    last dimension; `gamma` and `beta` have that dimension's size.

    ```mlir
    %y = nn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32}
        : (tensor<4x64x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x64x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gamma,
                       NN_FloatTensor:$beta,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LinearOp : NN_ForwardOp<"linear"> {
  let summary = "affine map over the last dimension, with an optional bias";
  let description = [{
    `result = input * weight^T + bias`, with `weight` [out, in] as in PyTorch.
    The bias is optional (the output projection tied to the token embedding
    has none). Its backward is split: an input-gradient op and a
    weight-gradient op.

    ```mlir
    %y = nn.linear %x, %w, %b
        : (tensor<4x64x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<4x64x96xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def NN_AttentionOp : NN_ForwardOp<"attention"> {
  let summary = "multi-head scaled dot-product attention on fused q/k/v";
  let description = [{
    The operand is the output of the fused qkv projection, [B, T, 3H]: q, k
    and v are its three consecutive H-wide thirds, each split into
    `num_heads` heads of H / num_heads features. With `causal`, position t
    attends to positions <= t (GPT); without, to all positions (BERT). The
    result is [B, T, H], heads concatenated. Kernels never materialise the
    T x T score matrix.

    ```mlir
    %a = nn.attention %qkv heads(4) causal
        : (tensor<4x64x96xf32>) -> tensor<4x64x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$qkv, ConfinedAttr<I64Attr,
                       [IntPositive]>:$num_heads, UnitAttr:$causal);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `heads` `(` $num_heads `)` (`causal` $causal^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_GeluOp : NN_ForwardOp<"gelu"> {
  let summary = "GELU, tanh form (GPT-2)";
  let description = [{
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, element-wise.

    ```mlir
    %y = nn.gelu %x : (tensor<4x64x128xf32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def NN_AddOp : NN_ForwardOp<"add", [Commutative]> {
  let summary = "element-wise sum of two tensors of one type (residual add)";
  let description = [{
    No broadcasting: both operands and the result have one type.

    ```mlir
    %y = nn.add %x, %r : (tensor<4x64x32xf32>, tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def NN_CrossEntropyOp : NN_ForwardOp<"cross_entropy"> {
  let summary = "mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` is [..., V] and `labels` has the same leading dimensions. The
    loss is the mean over positions whose label is not `ignore_index`
    (BERT's masked LM marks unmasked positions so); it is 0 when every label
    is ignored. The result is a 0-d f32 tensor.

    ```mlir
    %loss = nn.cross_entropy %logits, %labels
        : (tensor<4x64x512xf32>, tensor<4x64xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_Scalar:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
}

include "bitpipe/Dialect/NN/IR/NNGradOps.td"

#endif // BITPIPE_DIALECT_NN_NNOPS_TD
