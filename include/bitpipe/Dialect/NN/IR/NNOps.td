//===- NNOps.td - nn forward operations ---------------------*- tablegen -*-===//
//
// The forward op set of GPT-, BERT- and LLaMA-style transformers. Layouts
// follow PyTorch: activations are [batch, seq, features], a linear weight is
// [out, in].
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_NNOPS_TD
#define BITPIPE_DIALECT_NN_NNOPS_TD

include "bitpipe/Dialect/NN/IR/NNAttrs.td"
include "bitpipe/Dialect/NN/IR/NNDialect.td"
include "bitpipe/Dialect/NN/IR/NNInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NN_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def NN_IndexTensor : RankedTensorOf<[I32, I64]>;
def NN_Scalar : 0DTensorOf<[F32]>;
// A micro-batch's random key: the model function's `nn.input =
// "dropout_key"` argument, four i32 words the runtime fills per
// micro-batch (docs/training-semantics.md, "Dropout").
def NN_KeyTensor : 1DTensorOf<[I32]>;

// A forward op: pure, with its result type inferred from its operands, a
// backward rule and a cost. `backwardMethods`: the BackwardOpInterface
// methods with a default that the op defines itself (the statistics').
class NN_ForwardOp<string mnemonic, list<Trait> traits = [],
                   list<string> backwardMethods = []>
    : NN_Op<mnemonic, traits # [
        Pure, InferTypeOpAdaptor,
        DeclareOpInterfaceMethods<NN_BackwardOpInterface,
                                  ["getBackwardOpNames"] # backwardMethods>,
        DeclareOpInterfaceMethods<NN_CostOpInterface>]> {
  let hasVerifier = 1;
}

def NN_EmbeddingOp : NN_ForwardOp<"embedding"> {
  let summary = "token embedding plus an optional learned position embedding";
  let description = [{
    `result[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]`. Token ids index the
    rows of `wte` ([vocab, hidden]); positions 0..T-1 index the rows of `wpe`
    ([max_positions, hidden]), so T must not exceed max_positions. Without
    `wpe` (a model with rotary positions, LLaMA) the result is the token
    rows alone.

    ```mlir
    %x = nn.embedding %tokens, %wte, %wpe
        : (tensor<4x64xi32>, tensor<512x32xf32>, tensor<64x32xf32>) -> tensor<4x64x32xf32>
    %y = nn.embedding %tokens, %wte
        : (tensor<4x64xi32>, tensor<512x32xf32>) -> tensor<4x64x32xf32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$tokens, NN_FloatTensor:$wte,
                       Optional<NN_FloatTensor>:$wpe);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $wte (`,` $wpe^)? attr-dict `:` functional-type(operands, results)
  }];
  // Without wpe (rotary models) the kernel takes NULL.
  let kernelCalls = [NN_KernelCall<"embedding_fwd", (call
      (operand $tokens), (operand $wte), (operand $wpe), (result $result),
      (dim $tokens, 0), (dim $tokens, 1), (last_dim $wte), (dim $wte, 0))>];
}

def NN_LayerNormOp : NN_ForwardOp<"layer_norm", [],
    ["buildWithStatistics", "getNumStatisticResults",
     "getStatisticBytes"]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta`, statistics over the
    last dimension; `gamma` and `beta` have that dimension's size. With
    `with_stats` the op also returns each row's mean and 1 / sqrt(var +
    epsilon) (f32, the input's shape without its last dimension), which its
    backward reads instead of computing them again (docs/architecture.md,
    "Saved statistics").

    ```mlir
    %y = nn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32}
        : (tensor<4x64x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x64x32xf32>
    %z, %mean, %rstd = nn.layer_norm %x, %g, %b with_stats
        : (tensor<4x64x32xf32>, tensor<32xf32>, tensor<32xf32>)
        -> (tensor<4x64x32xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gamma,
                       NN_FloatTensor:$beta,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       UnitAttr:$with_stats);
  let results = (outs NN_FloatTensor:$result, Variadic<F32Tensor>:$stats);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta (`with_stats` $with_stats^)? attr-dict `:`
    functional-type(operands, results)
  }];
  // Without with_stats, mean and rstd are scratch.
  let kernelCalls = [NN_KernelCall<"layer_norm_fwd", (call
      (operand $input), (operand $gamma), (operand $beta), (result $result),
      (stat $stats, 0, (rows $input)), (stat $stats, 1, (rows $input)),
      (rows $input), (last_dim $input), (f32 $epsilon))>];
}

def NN_RMSNormOp : NN_ForwardOp<"rms_norm", [],
    ["buildWithStatistics", "getNumStatisticResults",
     "getStatisticBytes"]> {
  let summary = "root-mean-square normalisation over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * gamma` (LLaMA's RMSNorm: no centring,
    no bias), statistics over the last dimension; `gamma` has that
    dimension's size. With `with_stats` the op also returns each row's
    1 / sqrt(mean(x^2) + epsilon) (f32, the input's shape without its last
    dimension) for its backward.

    ```mlir
    %y = nn.rms_norm %x, %g {epsilon = 1.0e-06 : f32}
        : (tensor<4x64x32xf32>, tensor<32xf32>) -> tensor<4x64x32xf32>
    %z, %rstd = nn.rms_norm %x, %g with_stats
        : (tensor<4x64x32xf32>, tensor<32xf32>) -> (tensor<4x64x32xf32>, tensor<4x64xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gamma,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       UnitAttr:$with_stats);
  let results = (outs NN_FloatTensor:$result, Variadic<F32Tensor>:$stats);
  let assemblyFormat = [{
    $input `,` $gamma (`with_stats` $with_stats^)? attr-dict `:`
    functional-type(operands, results)
  }];
  // Without with_stats, rstd is scratch.
  let kernelCalls = [NN_KernelCall<"rms_norm_fwd", (call
      (operand $input), (operand $gamma), (result $result),
      (stat $stats, 0, (rows $input)), (rows $input), (last_dim $input),
      (f32 $epsilon))>];
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
  // Without a bias the kernel takes NULL.
  let kernelCalls = [NN_KernelCall<"linear_fwd", (call
      (operand $input), (operand $weight), (operand $bias), (result $result),
      (rows $input), (last_dim $input), (last_dim $result))>];
}

def NN_AttentionOp : NN_ForwardOp<"attention", [],
    ["buildWithStatistics", "getNumStatisticResults",
     "getStatisticBytes", "getValuesSavedWithStatistics"]> {
  let summary = "multi-head or grouped-query scaled dot-product attention on fused q/k/v";
  let description = [{
    The operand is the output of the fused qkv projection. Without
    `kv_heads` it is [B, T, 3H]: q, k and v are its three consecutive
    H-wide thirds, each split into `num_heads` heads of d = H / num_heads
    features. With `kv_heads(K)` (grouped-query attention, LLaMA-2-70B,
    Mistral) it is [B, T, (num_heads + 2K) d]: q has num_heads heads, k and
    v have K heads each, and query head h reads key/value head
    h / (num_heads / K); K divides num_heads. `kv_heads` equal to
    `num_heads` is plain multi-head attention. With `causal`, position t
    attends to positions <= t (GPT); without, to all positions (BERT). The
    result is [B, T, num_heads * d], heads concatenated. Kernels never
    materialise the T x T score matrix.

    With `dropout(%key, #nn.dropout<p, site = s>)` the attention
    probabilities are dropped as GPT-2's and BERT's `attn_pdrop` /
    `attention_probs_dropout_prob` do: each with probability p, the kept
    ones scaled by 1 / (1 - p), before they weigh the values; the mask is
    site s's for the micro-batch's key. Only without grouping.

    With `with_stats` the op also returns the log-sum-exp of every query
    row's scores, `lse` [B, num_heads, T] f32 (FlashAttention's softmax
    statistics), which its backward reads instead of running the forward
    again (bitpipe-generate-backward asks for it; docs/architecture.md,
    "Saved statistics").

    ```mlir
    %a = nn.attention %qkv heads(4) causal
        : (tensor<4x64x96xf32>) -> tensor<4x64x32xf32>
    %g = nn.attention %qkv heads(4) kv_heads(2) causal
        : (tensor<4x64x64xf32>) -> tensor<4x64x32xf32>
    %d = nn.attention %qkv heads(4) causal
        dropout(%key, #nn.dropout<1.000000e-01, site = 1>)
        : (tensor<4x64x96xf32>, tensor<4xi32>) -> tensor<4x64x32xf32>
    %s, %lse = nn.attention %qkv heads(4) causal with_stats
        : (tensor<4x64x96xf32>) -> (tensor<4x64x32xf32>, tensor<4x4x64xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$qkv, ConfinedAttr<I64Attr,
                       [IntPositive]>:$num_heads,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:
                           $num_kv_heads,
                       UnitAttr:$causal,
                       Optional<NN_KeyTensor>:$key,
                       OptionalAttr<NN_DropoutAttr>:$dropout,
                       UnitAttr:$with_stats);
  let results = (outs NN_FloatTensor:$result, Optional<F32Tensor>:$lse);
  let assemblyFormat = [{
    $qkv `heads` `(` $num_heads `)` (`kv_heads` `(` $num_kv_heads^ `)`)?
    (`causal` $causal^)? (`dropout` `(` $key^ `,` qualified($dropout) `)`)?
    (`with_stats` $with_stats^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The key/value head count: kv_heads, or num_heads without it.
    int64_t getKvHeadCount() {
      return getNumKvHeads() ? int64_t(*getNumKvHeads()) : int64_t(getNumHeads());
    }
  }];
}

def NN_RotaryOp : NN_ForwardOp<"rotary"> {
  let summary = "rotary position embedding of the q and k heads of fused q/k/v";
  let description = [{
    The operand is laid out as nn.attention's (heads, kv_heads). Every q and
    k head vector x (d features, d even) at position t is rotated as in
    Hugging Face's LLaMA (`rotate_half`): for i < d/2, with
    angle = t * base^(-2i/d),
    `x'[i] = x[i] cos - x[i + d/2] sin`, `x'[i + d/2] = x[i + d/2] cos +
    x[i] sin`. The v heads pass through unchanged. `base` is the
    Hugging Face `rope_theta` (10000 by default, LLaMA-3 uses 500000).

    ```mlir
    %r = nn.rotary %qkv heads(4) kv_heads(2) {base = 1.0e+04 : f32}
        : (tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$qkv,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:
                           $num_kv_heads,
                       DefaultValuedAttr<F32Attr, "10000.0">:$base);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `heads` `(` $num_heads `)` (`kv_heads` `(` $num_kv_heads^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let kernelCalls = [NN_KernelCall<"rotary_fwd", (call
      (operand $qkv), (result $result), (dim $qkv, 0), (dim $qkv, 1),
      (i64 "$_op.getQueryWidth()"), (i64 "$_op.getNumHeads()"),
      (i64 "$_op.getKvHeadCount()"), (f32 $base))>];
  let extraClassDeclaration = [{
    /// The key/value head count: kv_heads, or num_heads without it.
    int64_t getKvHeadCount() {
      return getNumKvHeads() ? int64_t(*getNumKvHeads()) : int64_t(getNumHeads());
    }
    /// The q heads' width, num_heads * d (d the head size).
    int64_t getQueryWidth() {
      int64_t width = ::llvm::cast<::mlir::ShapedType>(getQkv().getType())
                          .getShape().back();
      int64_t heads = getNumHeads();
      return width / (heads + 2 * getKvHeadCount()) * heads;
    }
  }];
}

def NN_GeluOp : NN_ForwardOp<"gelu"> {
  let summary = "GELU, tanh form (GPT-2) or exact (BERT)";
  let description = [{
    Element-wise. `form(tanh)`, the default and elided:
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, GPT-2's `gelu_new`.
    `form(erf)`: `0.5 x (1 + erf(x / sqrt(2)))`, the exact GELU of the
    original BERT (Hugging Face's `hidden_act: "gelu"`). Only the tanh form
    fuses into a matrix product's epilogue.

    ```mlir
    %y = nn.gelu %x : (tensor<4x64x128xf32>) -> tensor<4x64x128xf32>
    %z = nn.gelu %x form(erf) : (tensor<4x64x128xf32>) -> tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<NN_GeluForm, "GeluForm::Tanh">:$form);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`form` `(` $form^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $input), (result $result), (numel $input)),
      "$_op.getForm() == ::bitpipe::nn::GeluForm::Erf", "gelu_erf_fwd">];
}

def NN_SwiGLUOp : NN_ForwardOp<"swiglu"> {
  let summary = "SwiGLU gate: silu(gate) * up, element-wise (LLaMA's MLP)";
  let description = [{
    `gate * sigmoid(gate) * up`, element-wise, on the outputs of the MLP's
    gate and up projections (two nn.linear ops); the down projection is a
    third. Both operands and the result have one type.

    ```mlir
    %m = nn.swiglu %gate, %up
        : (tensor<4x64x88xf32>, tensor<4x64x88xf32>) -> tensor<4x64x88xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$gate, NN_FloatTensor:$up);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $gate `,` $up attr-dict `:` functional-type(operands, results)
  }];
  let kernelCalls = [NN_KernelCall<"swiglu_fwd", (call
      (operand $gate), (operand $up), (result $result), (numel $result))>];
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

def NN_DropoutOp : NN_ForwardOp<"dropout"> {
  let summary = "drops elements at random and scales the kept ones";
  let description = [{
    Each element is zeroed with probability p and the kept ones are scaled
    by 1 / (1 - p), as PyTorch's `nn.Dropout` in training. Which elements
    are kept is a pure function of the micro-batch's `key`, the site and
    the element's index (docs/training-semantics.md, "Dropout"), so the
    backward, another rank or another schedule draws the same mask. The
    backward is the same map on the gradient: an nn.dropout of the
    gradient with this op's key and site.

    ```mlir
    %y = nn.dropout %x, %key {dropout = #nn.dropout<1.000000e-01, site = 2>}
        : (tensor<4x64x32xf32>, tensor<4xi32>) -> tensor<4x64x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_KeyTensor:$key,
                       NN_DropoutAttr:$dropout);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $key attr-dict `:` functional-type(operands, results)
  }];
  let kernelCalls = [NN_KernelCall<"dropout", (call
      (operand $input), (result $result), (operand $key),
      (i32 "$_op.getDropoutAttr().getSite()"),
      (f32 "$_op.getDropoutAttr().getP()"), (numel $result))>];
}

def NN_CrossEntropyOp : NN_ForwardOp<"cross_entropy", [],
    ["buildWithStatistics", "getNumStatisticResults",
     "getStatisticBytes"]> {
  let summary = "mean cross-entropy of logits against integer labels";
  let description = [{
    `logits` is [..., V] and `labels` has the same leading dimensions. The
    loss is the mean over positions whose label is not `ignore_index`
    (BERT's masked LM marks unmasked positions so); it is 0 when every label
    is ignored. The result is a 0-d f32 tensor. With `with_stats` the op
    also returns each row's softmax normaliser in two parts, the row's
    largest logit and log(sum exp(logit - largest)) (f32, the logits' shape
    without the vocab dimension; 0 for an ignored row), which its backward
    reads instead of another pass over the row (docs/architecture.md,
    "Saved statistics").

    ```mlir
    %loss = nn.cross_entropy %logits, %labels
        : (tensor<4x64x512xf32>, tensor<4x64xi32>) -> tensor<f32>
    %l, %max, %logsum = nn.cross_entropy %logits, %labels with_stats
        : (tensor<4x64x512xf32>, tensor<4x64xi32>)
        -> (tensor<f32>, tensor<4x64xf32>, tensor<4x64xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       UnitAttr:$with_stats);
  let results = (outs NN_Scalar:$loss, Variadic<F32Tensor>:$stats);
  let assemblyFormat = [{
    $logits `,` $labels (`with_stats` $with_stats^)? attr-dict `:`
    functional-type(operands, results)
  }];
  // Without with_stats, the rows' statistics are scratch.
  let kernelCalls = [NN_KernelCall<"cross_entropy_fwd", (call
      (operand $logits), (operand $labels), (result $loss),
      (stat $stats, 0, (rows $logits)), (stat $stats, 1, (rows $logits)),
      (rows $logits), (last_dim $logits), (i32 $ignore_index))>];
}

include "bitpipe/Dialect/NN/IR/NNGradOps.td"

#endif // BITPIPE_DIALECT_NN_NNOPS_TD
