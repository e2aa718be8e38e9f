//===- NNGradOps.td - nn backward operations ----------------*- tablegen -*-===//
//
// The ops that forward ops' backward rules emit. Input-gradient work and
// weight-gradient work are separate ops (the latter carry NN_WeightGradient)
// so that a zero-bubble schedule can run them at different times. Weight
// gradients are per micro-batch; accumulation over micro-batches is the
// runtime's business.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_NNGRADOPS_TD
#define BITPIPE_DIALECT_NN_NNGRADOPS_TD

class NN_GradOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, traits # [Pure]> {
  let hasVerifier = 1;
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def NN_EmbeddingGradOp : NN_GradOp<"embedding_grad", [NN_WeightGradient]> {
  let summary = "gradients of the token and (optional) position embedding tables";
  let description = [{
    Scatter-adds `grad[b, t, :]` into row `tokens[b, t]` of the token-table
    gradient and, when the embedding has a position table, into row t of
    its gradient (the second result). The result types give the tables'
    shapes.
  }];
  let arguments = (ins NN_IndexTensor:$tokens, NN_FloatTensor:$grad);
  let results = (outs NN_FloatTensor:$wte_grad,
                      Optional<NN_FloatTensor>:$wpe_grad);
  // Both tables' gradients accumulate (a scatter-add); without wpe_grad the
  // kernel takes NULL.
  let kernelCalls = [NN_KernelCall<"embedding_bwd", (call
      (operand $tokens), (operand $grad), (grad_acc $wte_grad),
      (grad_acc $wpe_grad), (dim $tokens, 0), (dim $tokens, 1),
      (last_dim $wte_grad), (dim $wte_grad, 0))>];
}

def NN_LayerNormGradOp : NN_GradOp<"layer_norm_grad"> {
  let summary = "gradients of layer_norm's input, gain and bias";
  let description = [{
    Returns the input, gain and bias gradients. Reads the forward's row
    statistics, mean and rstd, when given (`stats`, a `with_stats`
    forward's results); else computes them again from `input`.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gamma,
                       NN_FloatTensor:$grad, Variadic<F32Tensor>:$stats,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$gamma_grad,
                      NN_FloatTensor:$beta_grad);
  // Without stats, the forward kernel computes mean and rstd again first.
  // Its normalised output goes to input_grad, which the backward
  // overwrites; gamma stands in for beta, an [H] weight of the right
  // element type that does not change the statistics. Cost: one forward,
  // O(N*H), and 2*N floats of scratch.
  let kernelCalls = [
    NN_KernelCall<"layer_norm_fwd", (call
        (operand $input), (operand $gamma), (operand $gamma),
        (result $input_grad), (stat $stats, 0, (rows $input)):$mean,
        (stat $stats, 1, (rows $input)):$rstd, (rows $input),
        (last_dim $input), (f32 $epsilon)), "", "",
        "$_op.getStats().empty()">,
    NN_KernelCall<"layer_norm_bwd", (call
        (operand $grad), (operand $input), (operand $gamma), $mean, $rstd,
        (result $input_grad), (grad_acc $gamma_grad), (grad_acc $beta_grad),
        (rows $input), (last_dim $input))>];
}

def NN_RMSNormGradOp : NN_GradOp<"rms_norm_grad"> {
  let summary = "gradients of rms_norm's input and gain";
  let description = [{
    Returns the input and gain gradients. Reads the forward's row rstd
    when given (`stats`), else computes it again from `input`.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gamma,
                       NN_FloatTensor:$grad, Variadic<F32Tensor>:$stats,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$gamma_grad);
  // Without stats, rstd again from the forward kernel, as for the layer
  // norm: its output goes to input_grad, which the backward overwrites.
  // Cost: one forward and N floats of scratch.
  let kernelCalls = [
    NN_KernelCall<"rms_norm_fwd", (call
        (operand $input), (operand $gamma), (result $input_grad),
        (stat $stats, 0, (rows $input)):$rstd, (rows $input),
        (last_dim $input), (f32 $epsilon)), "", "",
        "$_op.getStats().empty()">,
    NN_KernelCall<"rms_norm_bwd", (call
        (operand $grad), (operand $input), (operand $gamma), $rstd,
        (result $input_grad), (grad_acc $gamma_grad), (rows $input),
        (last_dim $input))>];
}

def NN_LinearInputGradOp : NN_GradOp<"linear_input_grad"> {
  let summary = "gradient of a linear op's input: grad * weight";
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$weight);
  let results = (outs NN_FloatTensor:$input_grad);
  let kernelCalls = [NN_KernelCall<"linear_bwd_input", (call
      (operand $grad), (operand $weight), (result $input_grad), (rows $grad),
      (last_dim $input_grad), (last_dim $grad))>];
}

def NN_LinearWeightGradOp
    : NN_GradOp<"linear_weight_grad", [NN_WeightGradient]> {
  let summary = "gradients of a linear op's weight (and bias, if it has one)";
  let description = [{
    `weight_grad = grad^T * input` summed over all leading dimensions, and
    `bias_grad = sum(grad)` when the op has a second result.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad);
  let results = (outs NN_FloatTensor:$weight_grad,
                      Optional<NN_FloatTensor>:$bias_grad);
  // Both accumulate; without bias_grad the kernel takes NULL.
  let kernelCalls = [NN_KernelCall<"linear_bwd_weight", (call
      (operand $grad), (operand $input), (grad_acc $weight_grad),
      (grad_acc $bias_grad), (rows $input), (last_dim $input),
      (last_dim $grad))>];
}

def NN_AttentionGradOp : NN_GradOp<"attention_grad",
                                   [AttrSizedOperandSegments]> {
  let summary = "gradient of attention's fused q/k/v operand";
  let description = [{
    Recomputes the attention probabilities block by block from `qkv` (as
    FlashAttention's backward does) and returns the gradient of `qkv`.
    `kv_heads` and `dropout` as on nn.attention: the forward's mask is
    drawn again from the same key and site. The backward also reads the
    forward's output and its rows' log-sum-exps: given as `saved(%out,
    %lse)` (a `with_stats` forward's results), or else computed by running
    the forward again first.
  }];
  let arguments = (ins NN_FloatTensor:$qkv, NN_FloatTensor:$grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:
                           $num_kv_heads,
                       UnitAttr:$causal,
                       Optional<NN_KeyTensor>:$key,
                       OptionalAttr<NN_DropoutAttr>:$dropout,
                       Optional<NN_FloatTensor>:$out,
                       Optional<F32Tensor>:$lse);
  let results = (outs NN_FloatTensor:$qkv_grad);
  let assemblyFormat = [{
    $qkv `,` $grad (`saved` `(` $out^ `,` $lse `)`)? `heads` `(` $num_heads `)`
    (`kv_heads` `(` $num_kv_heads^ `)`)? (`causal` $causal^)?
    (`dropout` `(` $key^ `,` qualified($dropout) `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The key/value head count: kv_heads, or num_heads without it.
    int64_t getKvHeadCount() {
      return getNumKvHeads() ? int64_t(*getNumKvHeads()) : int64_t(getNumHeads());
    }
  }];
}

def NN_RotaryGradOp : NN_GradOp<"rotary_grad"> {
  let summary = "gradient of rotary's fused q/k/v operand";
  let description = [{
    The rotation is orthogonal: the gradient of the q and k heads is
    `grad` rotated back by the same angles (the transpose), the v heads'
    gradient is `grad`'s. Needs no forward value.
  }];
  let arguments = (ins NN_FloatTensor:$grad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:
                           $num_kv_heads,
                       DefaultValuedAttr<F32Attr, "10000.0">:$base);
  let results = (outs NN_FloatTensor:$qkv_grad);
  let assemblyFormat = [{
    $grad `heads` `(` $num_heads `)` (`kv_heads` `(` $num_kv_heads^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let kernelCalls = [NN_KernelCall<"rotary_bwd", (call
      (operand $grad), (result $qkv_grad), (dim $grad, 0), (dim $grad, 1),
      (i64 "$_op.getQueryWidth()"), (i64 "$_op.getNumHeads()"),
      (i64 "$_op.getKvHeadCount()"), (f32 $base))>];
  let extraClassDeclaration = [{
    /// The key/value head count: kv_heads, or num_heads without it.
    int64_t getKvHeadCount() {
      return getNumKvHeads() ? int64_t(*getNumKvHeads()) : int64_t(getNumHeads());
    }
    /// The q heads' width, num_heads * d (d the head size).
    int64_t getQueryWidth() {
      int64_t width = ::llvm::cast<::mlir::ShapedType>(getGrad().getType())
                          .getShape().back();
      int64_t heads = getNumHeads();
      return width / (heads + 2 * getKvHeadCount()) * heads;
    }
  }];
}

def NN_GeluGradOp : NN_GradOp<"gelu_grad"> {
  let summary = "gradient of gelu's input";
  let description = [{
    `grad * gelu'(input)` for the forward op's form (nn.gelu).
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$grad,
                       DefaultValuedAttr<NN_GeluForm, "GeluForm::Tanh">:$form);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $grad (`form` `(` $form^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let kernelCalls = [NN_KernelCall<"gelu_bwd", (call
      (operand $grad), (operand $input), (result $input_grad),
      (numel $input)),
      "$_op.getForm() == ::bitpipe::nn::GeluForm::Erf", "gelu_erf_bwd">];
}

def NN_SwiGLUGradOp : NN_GradOp<"swiglu_grad"> {
  let summary = "gradients of swiglu's gate and up operands";
  let arguments = (ins NN_FloatTensor:$gate, NN_FloatTensor:$up,
                       NN_FloatTensor:$grad);
  let results = (outs NN_FloatTensor:$gate_grad, NN_FloatTensor:$up_grad);
  let kernelCalls = [NN_KernelCall<"swiglu_bwd", (call
      (operand $grad), (operand $gate), (operand $up), (result $gate_grad),
      (result $up_grad), (numel $gate))>];
}

def NN_CrossEntropyGradOp : NN_GradOp<"cross_entropy_grad"> {
  let summary = "gradient of the mean cross-entropy with respect to the logits";
  let description = [{
    `(softmax(logits) - onehot(labels)) * loss_grad / count` on positions
    whose label is not `ignore_index`, 0 elsewhere. Reads the forward's
    row statistics, max and log-sum, when given (`stats`, a `with_stats`
    forward's results); else computes them again from `logits`.
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       NN_Scalar:$loss_grad, Variadic<F32Tensor>:$stats,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$logits_grad);
  // Without stats, the forward kernel computes them again first (its loss
  // goes to scratch): one pass over the logits, and 2*N floats. The loss
  // gradient is passed by address (runtime.h): it lives where the tensors
  // do, on the device on the CUDA target, so no step waits for a host read.
  let kernelCalls = [
    NN_KernelCall<"cross_entropy_fwd", (call
        (operand $logits), (operand $labels), (scratch (i64 "1")),
        (stat $stats, 0, (rows $logits)):$row_max,
        (stat $stats, 1, (rows $logits)):$log_sum, (rows $logits),
        (last_dim $logits), (i32 $ignore_index)), "", "",
        "$_op.getStats().empty()">,
    NN_KernelCall<"cross_entropy_bwd", (call
        (operand $logits), (operand $labels), (operand $loss_grad), $row_max,
        $log_sum, (result $logits_grad), (rows $logits), (last_dim $logits),
        (i32 $ignore_index))>];
}

#endif // BITPIPE_DIALECT_NN_NNGRADOPS_TD
