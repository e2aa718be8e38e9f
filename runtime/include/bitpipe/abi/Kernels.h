/*===- bitpipe/abi/Kernels.h - The kernels of the nn ops ----------*- C -*-===*\
|*                                                                            *|
|* The one description of every kernel that compiled stage functions call:    *|
|* what it computes, and its parameters as (ROLE, name) pairs                 *|
|* (bitpipe/abi/KernelRoles.h), in order. From it come                        *|
|*  - runtime.h's prototypes, one per precision: bp_<kernel> (fp32) and       *|
|*    bp_<kernel>_bf16, with the C types of the roles, and bp_<kernel>_g64    *|
|*    for the kernels of parameter gradients (BP_GRAD_KERNELS);               *|
|*  - cuda.h's device kernels with a stream, bp_cuda_<kernel> (bf16) and      *|
|*    bp_cuda_<kernel>_f32, and the CUDA target's bp_<kernel>[_bf16], which   *|
|*    run them on the execution context's stream (runtime/lib/cuda/abi);      *|
|*  - the argument checks at the top of every CPU and CUDA kernel             *|
|*    (BP_KERNEL_ARGS_VALID);                                                 *|
|*  - the compiler's declarations of the kernels it calls                     *|
|*    (include/bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h).                   *|
|* The runtime's build fails when a header's prototype is not the list's      *|
|* (runtime/lib/core/AbiCheck.cpp) and the C and C++ compilers reject a       *|
|* definition that differs from its prototype.                                *|
|*                                                                            *|
|* Conventions (runtime.h says more): tensors are dense, contiguous and       *|
|* row-major, shapes listed outermost first; N is a row count (B * T);        *|
|* "writes" overwrites, "accumulates" adds (+=), so the caller zeroes once    *|
|* per step; outputs do not alias inputs unless a kernel says they may.       *|
|*                                                                            *|
|* Adding a kernel: its entry here and in BP_KERNELS below, a CPU definition  *|
|* (runtime/lib/cpu/kernels), a device pair (runtime/lib/cuda) and its name   *|
|* in the CUDA dispatch list (cuda.h's BP_CUDA_STREAM_KERNELS, which          *|
|* runtime/lib/cuda/abi/Kernels.cpp forwards); docs/adding-a-kernel.md walks  *|
|* through it.                                                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BITPIPE_ABI_KERNELS_H
#define BITPIPE_ABI_KERNELS_H

#include "bitpipe/abi/KernelRoles.h"

/*===-----------------------------------------------------------------------===
 * Embedding: out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]
 *   tokens [B, T], each in [0, V); wte [V, H]; wpe [P, H], P >= T, rows
 *   0..T-1 read, or NULL: no position table (rotary models), out = wte[ids];
 *   out [B, T, H].
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_embedding_fwd                                                \
  (IDS, tokens), (WEIGHT, wte), (WEIGHT_OPT, wpe), (ACT_OUT, out), (DIM, B),   \
      (DIM, T), (DIM, H), (DIM, V)

/* Accumulates dwte[tokens[b, t], :] += dout[b, t, :] (a scatter-add:
 * repeated tokens sum) and, unless dwpe is NULL, dwpe[t, :] += sum_b
 * dout[b, t, :]. dout [B, T, H]; dwte [V, H]; dwpe [P, H]. */
#define BP_KERNEL_embedding_bwd                                                \
  (IDS, tokens), (ACT_IN, dout), (GRAD_ACC, dwte), (GRAD_ACC_OPT, dwpe),       \
      (DIM, B), (DIM, T), (DIM, H), (DIM, V)

/*===-----------------------------------------------------------------------===
 * Layer norm over the last dimension:
 *   y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps),
 * var the biased variance (as PyTorch); eps >= 0.
 *   x, y [N, H]; gamma, beta [H]; mean, rstd [N] written, for the backward.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_layer_norm_fwd                                               \
  (ACT_IN, x), (WEIGHT, gamma), (WEIGHT, beta), (ACT_OUT, y),                  \
      (STAT_OUT, mean), (STAT_OUT, rstd), (DIM, N), (DIM, H), (SCALAR, eps)

/* Writes dx [N, H]; accumulates dgamma [H] and dbeta [H]. mean and rstd are
 * the forward's. */
#define BP_KERNEL_layer_norm_bwd                                               \
  (ACT_IN, dy), (ACT_IN, x), (WEIGHT, gamma), (STAT_IN, mean),                 \
      (STAT_IN, rstd), (ACT_OUT, dx), (GRAD_ACC, dgamma), (GRAD_ACC, dbeta),   \
      (DIM, N), (DIM, H)

/*===-----------------------------------------------------------------------===
 * RMS norm over the last dimension (LLaMA):
 *   y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps); eps >= 0.
 *   x, y [N, H]; gamma [H]; rstd [N] written, for the backward.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_rms_norm_fwd                                                 \
  (ACT_IN, x), (WEIGHT, gamma), (ACT_OUT, y), (STAT_OUT, rstd), (DIM, N),      \
      (DIM, H), (SCALAR, eps)

/* Writes dx [N, H]; accumulates dgamma [H]. rstd is the forward's. */
#define BP_KERNEL_rms_norm_bwd                                                 \
  (ACT_IN, dy), (ACT_IN, x), (WEIGHT, gamma), (STAT_IN, rstd), (ACT_OUT, dx),  \
      (GRAD_ACC, dgamma), (DIM, N), (DIM, H)

/*===-----------------------------------------------------------------------===
 * Linear: y = x W^T + b, W stored [Out, In] as PyTorch.
 *   x [N, In]; w [Out, In]; b [Out] or NULL (no bias); y [N, Out] written.
 * The backward is two kernels so that zero-bubble schedules can run the
 * weight gradient later than the input gradient.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_linear_fwd                                                   \
  (ACT_IN, x), (WEIGHT, w), (WEIGHT_OPT, b), (ACT_OUT, y), (DIM, N),           \
      (DIM, In), (DIM, Out)

/* Input gradient: writes dx = dy W. dy [N, Out]; w [Out, In]; dx [N, In]. */
#define BP_KERNEL_linear_bwd_input                                             \
  (ACT_IN, dy), (WEIGHT, w), (ACT_OUT, dx), (DIM, N), (DIM, In), (DIM, Out)

/* Linear with a GELU epilogue: writes pre = x W^T + b (the linear's own
 * result, which the backward and any other user read) and y = gelu(pre),
 * the tanh form of gelu_fwd; y, pre [N, Out]. Called where an nn.linear
 * feeds an nn.gelu, so that the GPU applies the GELU in the product's
 * epilogue (cuBLASLt); on the CPU it is linear_fwd then gelu_fwd, bit for
 * bit. */
#define BP_KERNEL_linear_gelu_fwd                                              \
  (ACT_IN, x), (WEIGHT, w), (WEIGHT_OPT, b), (ACT_OUT, y), (ACT_OUT, pre),     \
      (DIM, N), (DIM, In), (DIM, Out)

/* Input gradient through a GELU: for y = gelu(pre) W^T + b, writes the
 * gradient of pre, dx = (dy W) * gelu'(pre) (gelu_bwd's gelu').
 * dy [N, Out]; w [Out, In]; pre, dx [N, In]. Called where an nn.gelu_grad
 * takes an nn.linear_input_grad result used nowhere else; on the CPU it
 * computes linear_bwd_input then gelu_bwd, bit for bit. */
#define BP_KERNEL_linear_bwd_input_gelu                                        \
  (ACT_IN, dy), (WEIGHT, w), (ACT_IN, pre), (ACT_OUT, dx), (DIM, N),           \
      (DIM, In), (DIM, Out)

/* Weight gradient: accumulates dw += dy^T x and, unless db is NULL,
 * db += the sum over rows of dy. dy [N, Out]; x [N, In]; dw [Out, In];
 * db [Out]. */
#define BP_KERNEL_linear_bwd_weight                                            \
  (ACT_IN, dy), (ACT_IN, x), (GRAD_ACC, dw), (GRAD_ACC_OPT, db), (DIM, N),     \
      (DIM, In), (DIM, Out)

/*===-----------------------------------------------------------------------===
 * Multi-head scaled dot-product attention on a fused qkv projection.
 *   qkv [B, T, 3H]: q, k, v the three thirds, each split into nh heads of
 *     d = H / nh columns, head h owning columns h*d .. h*d+d-1 (GPT-2,
 *     Megatron); nh divides H.
 *   out [B, T, H] written: the heads' outputs, same layout.
 *   lse [B, nh, T] written: the log-sum-exp of each row of the scaled
 *     scores, for the backward.
 *   causal != 0: query t attends keys 0..t (GPT); 0: all keys (BERT).
 * Scores are scaled by 1 / sqrt(d). No T x T matrix is materialised.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_attention_fwd                                                \
  (ACT_IN, qkv), (ACT_OUT, out), (STAT_OUT, lse), (DIM, B), (DIM, T),          \
      (DIM, H), (DIM, nh), (INT, causal)

/* Writes dqkv [B, T, 3H] (qkv's layout). qkv, out and lse are the forward's
 * input and outputs; dout [B, T, H]. Recomputes the scores block by block
 * from qkv and lse. */
#define BP_KERNEL_attention_bwd                                                \
  (ACT_IN, qkv), (ACT_IN, out), (ACT_IN, dout), (STAT_IN, lse),                \
      (ACT_OUT, dqkv), (DIM, B), (DIM, T), (DIM, H), (DIM, nh), (INT, causal)

/*===-----------------------------------------------------------------------===
 * attention_fwd/bwd with dropout on the attention probabilities (GPT-2's
 * attn_pdrop, BERT's attention_probs_dropout_prob), as PyTorch's eager
 * attention: P = softmax(scale Q K^T + mask), P' = dropout(P), out = P' V.
 *   key: the micro-batch's random key (RNG_KEY), site: the dropout site,
 *     p: the probability of dropping; element ((b nh + h) T + i) T + j of
 *     the [B, nh, T, T] probabilities (query i, key j) is kept or dropped as
 *     docs/training-semantics.md ("Dropout") says, kept ones scaled by
 *     1 / (1 - p). 0 <= p < 1, 0 <= site < 2^24, B nh T T <= 2^40.
 *   lse is that of the undropped P, as attention_fwd's.
 * p == 0 is attention_fwd/bwd, result for result. Multi-head layout only.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_attention_dropout_fwd                                        \
  (ACT_IN, qkv), (ACT_OUT, out), (STAT_OUT, lse), (DIM, B), (DIM, T),          \
      (DIM, H), (DIM, nh), (INT, causal), (RNG_KEY, key), (INT, site),         \
      (SCALAR, p)

/* Writes dqkv as attention_bwd does, through the same mask: dV = P'^T dO,
 * and dP, the gradient of P, is dO V^T dropped and scaled as P' was. out
 * and lse are those the forward with the same key, site and p wrote. */
#define BP_KERNEL_attention_dropout_bwd                                        \
  (ACT_IN, qkv), (ACT_IN, out), (ACT_IN, dout), (STAT_IN, lse),                \
      (ACT_OUT, dqkv), (DIM, B), (DIM, T), (DIM, H), (DIM, nh), (INT, causal), \
      (RNG_KEY, key), (INT, site), (SCALAR, p)

/*===-----------------------------------------------------------------------===
 * Grouped-query attention (LLaMA-2-70B, Mistral): attention_fwd/bwd with
 * nkv key/value heads, nkv dividing nh.
 *   qkv [B, T, (nh + 2 nkv) d], d = H / nh: q the first nh heads, k the
 *     next nkv, v the last nkv; query head h reads key/value head
 *     h / (nh / nkv). out, lse and causal as attention_fwd's.
 * nkv == nh is attention_fwd's layout and result.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_attention_gqa_fwd                                            \
  (ACT_IN, qkv), (ACT_OUT, out), (STAT_OUT, lse), (DIM, B), (DIM, T),          \
      (DIM, H), (DIM, nh), (DIM, nkv), (INT, causal)

/* Writes dqkv [B, T, (nh + 2 nkv) d]; the gradients of a key/value head sum
 * over the query heads that read it. As attention_bwd otherwise. */
#define BP_KERNEL_attention_gqa_bwd                                            \
  (ACT_IN, qkv), (ACT_IN, out), (ACT_IN, dout), (STAT_IN, lse),                \
      (ACT_OUT, dqkv), (DIM, B), (DIM, T), (DIM, H), (DIM, nh), (DIM, nkv),    \
      (INT, causal)

/*===-----------------------------------------------------------------------===
 * Rotary position embedding of the q and k heads of a fused qkv (LLaMA,
 * Hugging Face's rotate_half layout):
 *   qkv, out [B, T, (nh + 2 nkv) d], d = H / nh even, laid out as
 *     attention_gqa_fwd's. For each q and k head vector x at position t and
 *     i < d/2, with a = t * base^(-2i/d):
 *       out[i]       = x[i] cos(a) - x[i + d/2] sin(a)
 *       out[i + d/2] = x[i + d/2] cos(a) + x[i] sin(a)
 *     The v heads are copied. out may alias qkv.
 *   base: rope_theta (10000 in LLaMA-1/2), > 0. The angles are computed in
 *     double, their cosines and sines rounded to float.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_rotary_fwd                                                   \
  (ACT_IN, qkv), (ACT_OUT, out), (DIM, B), (DIM, T), (DIM, H), (DIM, nh),      \
      (DIM, nkv), (SCALAR, base)

/* Writes dqkv: dout rotated back (angle -a) in the q and k heads, copied in
 * the v heads. dqkv may alias dout. */
#define BP_KERNEL_rotary_bwd                                                   \
  (ACT_IN, dout), (ACT_OUT, dqkv), (DIM, B), (DIM, T), (DIM, H), (DIM, nh),    \
      (DIM, nkv), (SCALAR, base)

/*===-----------------------------------------------------------------------===
 * GELU, tanh form (GPT-2):
 *   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   x, y [n]; y may alias x.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_gelu_fwd (ACT_IN, x), (ACT_OUT, y), (DIM, n)

/* Writes dx = dy * gelu'(x); x is the forward's input. dx may alias dy. */
#define BP_KERNEL_gelu_bwd (ACT_IN, dy), (ACT_IN, x), (ACT_OUT, dx), (DIM, n)

/*===-----------------------------------------------------------------------===
 * GELU, exact form (BERT; nn.gelu form(erf)): y = 0.5 x (1 + erf(x / sqrt 2))
 *   x, y [n]; y may alias x.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_gelu_erf_fwd (ACT_IN, x), (ACT_OUT, y), (DIM, n)

/* Writes dx = dy * gelu'(x), gelu' = Phi(x) + x phi(x). dx may alias dy. */
#define BP_KERNEL_gelu_erf_bwd                                                 \
  (ACT_IN, dy), (ACT_IN, x), (ACT_OUT, dx), (DIM, n)

/*===-----------------------------------------------------------------------===
 * SwiGLU (LLaMA's MLP): y = silu(gate) * up = gate * sigmoid(gate) * up.
 *   gate, up, y [n]; y may alias gate or up.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_swiglu_fwd                                                   \
  (ACT_IN, gate), (ACT_IN, up), (ACT_OUT, y), (DIM, n)

/* Writes dgate = dy * up * silu'(gate) and dup = dy * silu(gate),
 * silu'(g) = s (1 + g (1 - s)), s = sigmoid(g); all [n]. dgate and dup must
 * not alias each other. */
#define BP_KERNEL_swiglu_bwd                                                   \
  (ACT_IN, dy), (ACT_IN, gate), (ACT_IN, up), (ACT_OUT, dgate),                \
      (ACT_OUT, dup), (DIM, n)

/*===-----------------------------------------------------------------------===
 * Residual add: out = a + b, all [n]; out may alias a or b.
 * There is no backward kernel: each operand's gradient is dout itself. The
 * same kernel sums gradients where a value fans out (the residual stream
 * feeds a layer norm and the add): add_fwd(dx, dres, dx, n).
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_add_fwd (ACT_IN, a), (ACT_IN, b), (ACT_OUT, out), (DIM, n)

/*===-----------------------------------------------------------------------===
 * Dropout (docs/training-semantics.md, "Dropout"): with the mask of site
 * `site` for the micro-batch whose random key is `key` (core/Dropout.h's
 * DropoutMask),
 *   y[e] = x[e] * scale if element e is kept, 0 if it is dropped,
 *   scale = 1 / (1 - p) in fp32; x, y [n], e the element's row-major index
 *   in the site's tensor of one micro-batch; y may alias x.
 * p == 0 copies x to y (scale 1) without drawing. The backward is the same
 * map applied to the gradient, dx = dropout(dy) with the forward's key,
 * site and p: the compiler calls this one kernel for both directions, and
 * a recomputed forward draws the same mask. BP_ERR_INVALID_ARGUMENT unless
 * p is in [0, 1) (not NaN), site in [0, 2^24) (core/Dropout.h's
 * dropoutArgsValid) and n <= 2^40 (kDropoutMaxElements).
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_dropout                                                      \
  (ACT_IN, x), (ACT_OUT, y), (RNG_KEY, key), (INT, site), (SCALAR, p), (DIM, n)

/*===-----------------------------------------------------------------------===
 * Cross-entropy, mean over the rows whose label is not ignore_index:
 *   loss = (1 / count) * sum over those rows i of
 *            logsumexp(logits[i, :]) - logits[i, labels[i]]
 *   logits [N, V]; labels [N], each in [0, V) or == ignore_index
 *   (BP_IGNORE_INDEX for BERT's masked LM); loss written.
 *   row_max, log_sum [N] written, for the backward: row i's softmax
 *     normaliser in two parts, max_j logits[i, j] and
 *     log(sum_j exp(logits[i, j] - row_max[i])), kept apart so that large
 *     logits lose no bits (an ignored row's are 0).
 * If every label is ignored the loss is 0 (not NaN) and the backward
 * writes zero gradients.
 *===----------------------------------------------------------------------===*/
#define BP_KERNEL_cross_entropy_fwd                                            \
  (ACT_IN, logits), (IDS, labels), (LOSS_OUT, loss), (STAT_OUT, row_max),      \
      (STAT_OUT, log_sum), (DIM, N), (DIM, V), (INT, ignore_index)

/* Writes dlogits [N, V]: dloss * (softmax(logits[i, :]) - onehot(labels[i]))
 * / count for a row not ignored, 0 for one ignored. *dloss is the gradient
 * of the scalar loss (1, or 1 / micro-batches), read by the kernel from the
 * tensors' memory so that no step waits to read it on the host. row_max and
 * log_sum are the forward's: softmax(logits[i, :])[j] =
 * exp((logits[i, j] - row_max[i]) - log_sum[i]). dlogits may alias logits. */
#define BP_KERNEL_cross_entropy_bwd                                            \
  (ACT_IN, logits), (IDS, labels), (LOSS_IN, dloss), (STAT_IN, row_max),       \
      (STAT_IN, log_sum), (ACT_OUT, dlogits), (DIM, N), (DIM, V),              \
      (INT, ignore_index)

/*===-----------------------------------------------------------------------===
 * Every kernel above, for X(kernel) tables.
 *===----------------------------------------------------------------------===*/
#define BP_KERNELS(X)                                                          \
  X(embedding_fwd)                                                             \
  X(embedding_bwd)                                                             \
  X(layer_norm_fwd)                                                            \
  X(layer_norm_bwd)                                                            \
  X(rms_norm_fwd)                                                              \
  X(rms_norm_bwd)                                                              \
  X(linear_fwd)                                                                \
  X(linear_bwd_input)                                                          \
  X(linear_gelu_fwd)                                                           \
  X(linear_bwd_input_gelu)                                                     \
  X(linear_bwd_weight)                                                         \
  X(attention_fwd)                                                             \
  X(attention_bwd)                                                             \
  X(attention_dropout_fwd)                                                     \
  X(attention_dropout_bwd)                                                     \
  X(attention_gqa_fwd)                                                         \
  X(attention_gqa_bwd)                                                         \
  X(rotary_fwd)                                                                \
  X(rotary_bwd)                                                                \
  X(gelu_fwd)                                                                  \
  X(gelu_bwd)                                                                  \
  X(gelu_erf_fwd)                                                              \
  X(gelu_erf_bwd)                                                              \
  X(swiglu_fwd)                                                                \
  X(swiglu_bwd)                                                                \
  X(add_fwd)                                                                   \
  X(dropout)                                                                   \
  X(cross_entropy_fwd)                                                         \
  X(cross_entropy_bwd)

/* The kernels with parameter gradients (GRAD_ACC roles), which also come in
 * precision F32_G64 as bp_<kernel>_g64: fp32 tensors, float64 gradient
 * accumulators. The CPU target's stage functions accumulate straight into
 * the rank's float64 accumulators with them (docs/runtime-abi.md,
 * "Parameter gradients"): each adds, in float64, the fp32 value its fp32
 * form would have accumulated into a zeroed buffer, so the two forms give
 * the same sums bit for bit. The CPU library defines them; the CUDA target,
 * whose accumulators are fp32, does not. */
#define BP_GRAD_KERNELS(X)                                                     \
  X(embedding_bwd)                                                             \
  X(layer_norm_bwd)                                                            \
  X(rms_norm_bwd)                                                              \
  X(linear_bwd_weight)

#endif /* BITPIPE_ABI_KERNELS_H */
