/*===- bitpipe/cuda.h - C ABI of the runtime's CUDA kernels -------*- C -*-===*\
|*                                                                            *|
|* The device counterparts of runtime.h's kernels (embedding, layer norm,     *|
|* GELU, residual add, cross-entropy; matrix products through cuBLASLt;       *|
|* attention), the optimizer's kernels, the device memory pool they and       *|
|* their callers allocate from, and the context that lets runtime.h's own     *|
|* functions (the ABI compiled stage functions call) run on the device.       *|
|* Communication is not here: NCCL's communicator is runtime/lib/comm/nccl.   *|
|*                                                                            *|
|* Its tests (runtime/unittests/cuda) skip on a machine without a GPU;        *|
|* bench/gpu/check.sh runs them on one.                                       *|
|*                                                                            *|
|* Precision (mixed, as Megatron-LM and PyTorch autocast train):              *|
|*  - activations, their gradients and the weights the kernels read are       *|
|*    bfloat16, stored as bp_bf16_t (the 16 raw bits; __nv_bfloat16 inside); *|
|*  - every sum, mean and softmax is computed in fp32;                        *|
|*  - fp32 for what must not lose bits: layer-norm statistics (mean, rstd),   *|
|*    the loss, and the parameter-gradient accumulators (dgamma, dbeta,       *|
|*    dwte, dwpe), which live next to the fp32 master weights.                *|
|*                                                                            *|
|* Conventions: those of runtime.h (shapes, row-major layouts, "writes" vs    *|
|* "accumulates", BP_IGNORE_INDEX, mean over non-ignored rows, dloss, what    *|
|* may alias), plus:                                                          *|
|*  - Every tensor pointer is a device pointer. `stream` is a cudaStream_t   *|
|*    (NULL: the legacy default stream); kernels are enqueued on it and       *|
|*    return without waiting, so outputs are ready only in stream order.      *|
|*  - Host-checkable arguments (null pointers, non-positive sizes) are        *|
|*    checked before anything is enqueued: BP_ERR_INVALID_ARGUMENT.           *|
|*  - Token and label ids live on the device, so they are checked there,      *|
|*    asynchronously: a kernel that meets an id out of range neither reads    *|
|*    nor writes out of bounds, writes NaN for that row's outputs (skips its  *|
|*    gradient contributions), and records the error; bp_cuda_synchronize    *|
|*    reports it. The call itself still returns BP_OK.                        *|
|*  - A CUDA error (launch failure, or an earlier asynchronous fault that     *|
|*    the launch check sees) prints "bitpipe: cuda: <function>: <error>" to   *|
|*    stderr and returns BP_ERR_DEVICE.                                       *|
|*  - Scratch memory (a few KiB to a few MiB) comes from the pool below and   *|
|*    is returned to it in stream order: BP_ERR_OUT_OF_MEMORY if it cannot    *|
|*    be had.                                                                 *|
|*  - One device per process: the current device when the pool first        *|
|*    allocates (each pipeline rank owns one GPU).                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BITPIPE_CUDA_H
#define BITPIPE_CUDA_H

#include "bitpipe/runtime.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status code beyond runtime.h's and comm.h's (same numbering as the C++
 * ErrorCode): a CUDA runtime call or kernel launch failed. */
enum { BP_ERR_DEVICE = 8 };

/*===-----------------------------------------------------------------------===
 * The kernels of runtime.h on the device, from bitpipe/abi/Kernels.h (what
 * each computes, shapes, what may alias): for each kernel a bf16 function
 * bp_cuda_<kernel> and an fp32 one bp_cuda_<kernel>_f32 (the precision of
 * the equivalence tests), each with the kernel's parameters in its
 * precision and then the stream. The device's default precision is bf16,
 * so its kernels carry the plain name; the CPU's only one is fp32, so
 * runtime.h's do. The grouped-query attention of runtime.h has no pair: it
 * is the kv-head expansion below around bp_cuda_attention_*.
 *
 * How the device computes them, beyond Kernels.h:
 *  - embedding_bwd accumulates dwte with atomic adds (repeated tokens sum
 *    in an unspecified order: dwte may differ from run to run in the last
 *    bits) and dwpe one thread per element, summing b in order;
 *  - layer_norm_bwd and rms_norm_bwd accumulate the weight gradients in a
 *    fixed order (deterministic);
 *  - add sums in fp32 and rounds once;
 *  - dropout reads the key from device memory and draws core/Dropout.h's
 *    mask, the CPU kernel's bits; a kept bf16 element is x * scale in fp32,
 *    rounded once;
 *  - the linear kernels go through cuBLASLt: bf16 operands with fp32
 *    accumulation, or in _f32 fp32 operands with true fp32 products (no
 *    TF32); linear_gelu_fwd and linear_bwd_input_gelu use its bias+GELU
 *    and dGELU epilogues; algorithms are chosen once per shape and cached,
 *    and all calls share one workspace;
 *  - attention is the project's own tiled kernels (FlashAttention-2's
 *    algorithm), never materialising a T x T matrix; cuDNN's is below;
 *  - attention_dropout is the same kernels with the mask drawn in their
 *    tiles, both families (tensor-core and CUDA-core) and both precisions.
 *===----------------------------------------------------------------------===*/
/* The device kernels that runtime.h's functions of the CUDA target run
 * as they are, on the context's stream (runtime/lib/cuda/abi/Kernels.cpp);
 * then every device kernel: those and attention with and without dropout,
 * whose runtime.h functions choose between these kernels and cuDNN's
 * (abi/Attention.cpp). */
#define BP_CUDA_STREAM_KERNELS(X)                                              \
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
#define BP_CUDA_KERNELS(X)                                                     \
  BP_CUDA_STREAM_KERNELS(X)                                                    \
  X(attention_fwd)                                                             \
  X(attention_bwd)                                                             \
  X(attention_dropout_fwd)                                                     \
  X(attention_dropout_bwd)

#define BP_CUDA_DECLARE_KERNEL_(kernel)                                        \
  bp_status_t bp_cuda_##kernel(BP_KERNEL_PARAMS(BF16, kernel), void *stream);  \
  bp_status_t bp_cuda_##kernel##_f32(BP_KERNEL_PARAMS(F32, kernel),            \
                                     void *stream);
BP_CUDA_KERNELS(BP_CUDA_DECLARE_KERNEL_)
#undef BP_CUDA_DECLARE_KERNEL_

/*===-----------------------------------------------------------------------===
 * Grouped-query q/k/v to and from the multi-head layout, for
 * bp_attention_gqa_* (runtime/lib/cuda/KvHeads.cu):
 *   expand: mha [rows, 3H] from gqa [rows, (nh + 2 nkv) d], d = H / nh, each
 *     key/value head repeated for the nh / nkv query heads that read it;
 *   fold: dgqa from dmha, q copied, each key/value head's gradient the sum
 *     over its query heads (fp32, in order, rounded once).
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_kv_heads_expand(const bp_bf16_t *gqa, bp_bf16_t *mha,
                                    int64_t rows, int64_t H, int64_t nh,
                                    int64_t nkv, void *stream);
bp_status_t bp_cuda_kv_heads_fold(const bp_bf16_t *dmha, bp_bf16_t *dgqa,
                                  int64_t rows, int64_t H, int64_t nh,
                                  int64_t nkv, void *stream);
bp_status_t bp_cuda_kv_heads_expand_f32(const float *gqa, float *mha,
                                        int64_t rows, int64_t H, int64_t nh,
                                        int64_t nkv, void *stream);
bp_status_t bp_cuda_kv_heads_fold_f32(const float *dmha, float *dgqa,
                                      int64_t rows, int64_t H, int64_t nh,
                                      int64_t nkv, void *stream);

/* The same computation through cuDNN's fused scaled-dot-product attention
 * (its graph API), bf16 only. bp_cudnn_attention_supported says whether
 * cuDNN can run this shape on this device (building and caching its plan
 * on first ask); the two calls return BP_ERR_INVALID_ARGUMENT when not. */
int32_t bp_cudnn_attention_supported(int64_t B, int64_t T, int64_t H,
                                     int64_t nh, int32_t causal);
bp_status_t bp_cudnn_attention_fwd(const bp_bf16_t *qkv, bp_bf16_t *out,
                                   float *lse, int64_t B, int64_t T, int64_t H,
                                   int64_t nh, int32_t causal, void *stream);
bp_status_t bp_cudnn_attention_bwd(const bp_bf16_t *qkv, const bp_bf16_t *out,
                                   const bp_bf16_t *dout, const float *lse,
                                   bp_bf16_t *dqkv, int64_t B, int64_t T,
                                   int64_t H, int64_t nh, int32_t causal,
                                   void *stream);

/*===-----------------------------------------------------------------------===
 * Casts, fills and the optimizer's kernels.
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_fill_f32(float *out, float value, int64_t n,
                             void *stream);
bp_status_t bp_cuda_fill_bf16(bp_bf16_t *out, float value, int64_t n,
                              void *stream);
/* Round to nearest even. */
bp_status_t bp_cuda_cast_f32_to_bf16(const float *in, bp_bf16_t *out,
                                     int64_t n, void *stream);
bp_status_t bp_cuda_cast_bf16_to_f32(const bp_bf16_t *in, float *out,
                                     int64_t n, void *stream);
/* acc[i] += g[i], fp32: a micro-batch's parameter gradient into the rank's
 * accumulator. */
bp_status_t bp_cuda_accumulate_f32(float *acc, const float *g, int64_t n,
                                   void *stream);

/* A run of `count` consecutive elements of the parameter store: one
 * parameter tensor, or the part of one whose optimizer state a rank holds
 * under a sharded optimizer (docs/data-parallel.md, "Sharded optimizer").
 * Element k of the run is at offset + k of the gradients and of the bf16
 * copy of the weights, at master + k of the fp32 master weights and at
 * moment + k of the moments: all three are equal for a whole store; a
 * sharded one keeps its moments (and, under bf16, its master weights)
 * compactly. decay: whether AdamW's weight decay applies to it. The
 * norm's sum of squares reads the gradients only (offset). */
typedef struct bp_cuda_segment {
  int64_t offset;
  int64_t count;
  int64_t master;
  int64_t moment;
  int32_t decay;
  int32_t reserved; /* 0 */
} bp_cuda_segment;

/* *out (device, written) = sum over the segments of (scale * g[i])^2,
 * summed in fp64 in a fixed order (the same result every run).
 * segments: a device array. */
bp_status_t bp_cuda_sum_squares(const float *g, const bp_cuda_segment *segments,
                                int32_t num_segments, double scale,
                                double *out, void *stream);

/* The per-step constants of AdamW, formed on the host in double and rounded
 * once, exactly as the CPU optimizer forms them (runtime/lib/train/AdamW.cpp),
 * so that both targets run the same float arithmetic per element:
 *   g = (float)(grad * grad_scale)          (clip / micro-batches)
 *   m = beta1 m + one_minus_beta1 g;  v = beta2 v + one_minus_beta2 g g
 *   p = p * (decay ? decay_factor : 1) - step_size m / (sqrt(v) / root_bc2 + eps) */
typedef struct bp_cuda_adamw_constants {
  double grad_scale;
  float beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
  float step_size;    /* lr / (1 - beta1^t) */
  float root_bc2;     /* sqrt(1 - beta2^t) */
  float decay_factor; /* 1 - lr * weight_decay */
} bp_cuda_adamw_constants;

/* One fused AdamW step over every segment (a multi-tensor launch): updates
 * the fp32 master weights `params` (at each segment's `master`) and the
 * moments m and v (at its `moment`) in place from the fp32 gradients (at
 * its `offset`), and, when params_bf16 is not NULL, writes the bf16 copy
 * of each updated weight there (at `offset`) for the next step's stage
 * functions. Elements outside the segments are not touched. segments: a
 * device array; c: host memory, read before the call returns. */
bp_status_t bp_cuda_adamw_step(float *params, const float *grads, float *m,
                               float *v, bp_bf16_t *params_bf16,
                               const bp_cuda_segment *segments,
                               int32_t num_segments,
                               const bp_cuda_adamw_constants *c, void *stream);

/* Initial weights, drawn where they live: out[i] = (float)(stddev *
 * normal(seed, stream, first + i)) with the runtime's counter-based
 * generator (the host's core/Random.h, compiled for the device), so the
 * bits equal a host draw's. stream: the parameter's name hash. */
bp_status_t bp_cuda_init_normal(float *out, int64_t n, double stddev,
                                uint64_t seed, uint64_t stream, int64_t first,
                                void *cuda_stream);

/* The first element of each segment that a checkpoint may not hold, in
 * the order a host check reports it: per segment s, first[3 s + 0] the
 * first non-finite weight (params at `master`), first[3 s + 1] the first
 * non-finite first moment, first[3 s + 2] the first non-finite or
 * negative second moment (m and v at `moment`), each an index within the
 * segment or INT64_MAX for none. first: a device array of 3 num_segments,
 * overwritten. */
bp_status_t bp_cuda_find_invalid(const float *params, const float *m,
                                 const float *v,
                                 const bp_cuda_segment *segments,
                                 int32_t num_segments, int64_t *first,
                                 void *stream);

/*===-----------------------------------------------------------------------===
 * The execution context of runtime.h's kernels on the CUDA target.
 *
 * On the CUDA target the functions of runtime.h (bp_linear_fwd,
 * bp_linear_fwd_bf16, bp_alloc, ...: the ABI that compiled stage functions
 * call, the same on both targets) are implemented by this library: their
 * pointers are device pointers and their work is enqueued on the context's
 * stream. The precision is each call's (its name), not the context's.
 *===----------------------------------------------------------------------===*/

/* The stream runtime.h's kernels and bp_alloc / bp_free use (NULL: the
 * legacy default stream). One per process: a rank drives one device from
 * one thread; the executor sets it once, before any stage function runs. */
void bp_cuda_set_stream(void *stream);
void *bp_cuda_stream(void);

/*===-----------------------------------------------------------------------===
 * Errors.
 *===----------------------------------------------------------------------===*/

/* Waits for `stream`, then reports what its kernels could not return:
 * BP_ERR_DEVICE for an asynchronous CUDA error, BP_ERR_INVALID_ARGUMENT
 * (after printing which kernel) if a kernel met an out-of-range token or
 * label id since the last call, which clears that record; else BP_OK. */
bp_status_t bp_cuda_synchronize(void *stream);

/* The device-wide set-up of a rank, done once before its communicators
 * exist: the word where kernels record out-of-range ids, zeroed with a wait
 * for the whole device, cuBLASLt's handle and its workspace on the stream
 * of bp_cuda_set_stream (call that first), and the attention kernels'
 * shared-memory allowances (cudaFuncSetAttribute, which loads their
 * modules). Each is made at its first use otherwise, which may be in a
 * step, while a peer's NCCL kernel spins. BP_ERR_DEVICE when it fails. */
bp_status_t bp_cuda_prepare(void);

/* What the first bp_attention_fwd_bf16 / _bwd_bf16 of this shape would set
 * up, done now: cuDNN's handle and its plans for the shape (built with
 * run-time compilation), unless BITPIPE_CUDA_ATTENTION=own. The fp32 calls
 * never use cuDNN: an fp32 executor has nothing to prepare. Never fails: a
 * shape that cuDNN cannot run is left to the calls, which take the
 * runtime's own kernels. */
void bp_cuda_prepare_attention(int64_t B, int64_t T, int64_t H, int64_t nh,
                               int32_t causal);

/* The folder where cuDNN's attention plans are kept between runs, one file
 * per plan (cuDNN's serialized form, keyed by cuDNN's version, the device
 * and the shape), shared by the ranks of a node; NULL or "" for none. A
 * plan found there is restored instead of built (which compiles its kernel
 * at run time, seconds); one built is stored there. A damaged or refused
 * entry is said on stderr and built again. Call before the first plan is
 * made. */
void bp_cuda_set_plan_cache(const char *dir);

/* What making cuDNN's plans has cost this process so far. */
typedef struct bp_cuda_plan_stats {
  int32_t built;        /* plans built (heuristics, run-time compilation) */
  int32_t loaded;       /* plans restored from the plan cache */
  double build_seconds; /* spent building, including refused engines */
  double load_seconds;  /* spent restoring */
} bp_cuda_plan_stats;
void bp_cuda_get_plan_stats(bp_cuda_plan_stats *out);

/*===-----------------------------------------------------------------------===
 * Device memory: a caching pool, as bp_alloc is for host memory. Requests
 * round up to 512 B and are split from segments the pool keeps (2 MiB for
 * requests up to 1 MiB, 20 MiB or the request's size for larger ones);
 * freed blocks merge with free neighbours and serve any request that fits,
 * without cudaMalloc (which is slow and may synchronize the device). So
 * after the first step nothing is allocated from CUDA, and what the pool
 * holds stays close to its peak in use whatever sizes a step mixes
 * (docs/runtime-abi.md, "Device memory").
 *
 * Stream order, as cudaFreeAsync: bp_cuda_free(ptr, s) means "every use of
 * ptr is enqueued on s (or ordered before it)"; the block is then handed out
 * again only to bp_cuda_alloc(..., s), whose later work on s runs after those
 * uses. Synchronize a stream before destroying it: blocks freed on it stay
 * cached under its handle, which CUDA may give to a new stream. Segments
 * come from the device's stream-ordered pool (cudaMallocAsync) where it has
 * one, else from cudaMalloc. When that fails, the pool gives every segment
 * that is wholly free back in its stream's order (cudaFreeAsync, no host
 * wait) and tries once more; without stream-ordered allocation it fails at
 * once, since giving memory back (cudaFree) would wait for the whole device,
 * where a peer's NCCL kernel may spin.
 *===----------------------------------------------------------------------===*/

/* A device block of at least `bytes` (at least 1) bytes, 256-byte aligned;
 * NULL (after a message on stderr) when out of memory or without a device.
 * Thread-safe. */
void *bp_cuda_alloc(int64_t bytes, void *stream);
/* Returns a block of bp_cuda_alloc to the pool in `stream`'s order; NULL is
 * ignored. */
void bp_cuda_free(void *ptr, void *stream);
/* Bytes handed out now, the most ever at once, and held from CUDA in total
 * (handed out + cached). Any pointer may be NULL. */
void bp_cuda_memory_stats(int64_t *in_use, int64_t *peak_in_use,
                          int64_t *reserved);

/*===-----------------------------------------------------------------------===
 * The pool's blocks, for CUDA graphs of a step (the CUDA backend's
 * cuda/backend/StepGraph.h). A graph captured from a stream keeps the
 * addresses its kernels were given: replaying it is correct only while the
 * memory it used is held by no one else, and the blocks it kept are still
 * held by whoever kept them. Every hand-out of a block gets a serial number
 * (a block handed out again gets a new one), so that the backend can record
 * which blocks a capture used and check them before each replay. Blocks
 * split and merge (docs/runtime-abi.md, "Device memory"), so the check asks
 * about ranges of memory, not about blocks.
 *
 * While a stream of this thread is being captured (cudaStreamIsCapturing),
 * a segment the pool lacks comes from cudaMalloc under the relaxed capture
 * mode of this thread (stream-ordered allocation on the capturing stream
 * would become a node of the graph, valid only inside it) and stays the
 * pool's for the rest of the process; and nothing is given back to serve
 * a captured stream's request.
 *===----------------------------------------------------------------------===*/

typedef struct bp_cuda_pool_block {
  const void *ptr;
  int64_t bytes;   /* the block's size, rounded as the pool rounds it */
  uint64_t serial; /* which hand-out of the block */
} bp_cuda_pool_block;

/* Starts (on != 0, clearing the record) or stops recording every block the
 * pool hands out. */
void bp_cuda_pool_record(int32_t on);
/* The blocks handed out while recording, in order: writes at most
 * `capacity` of them to `out` (which may be NULL for 0) and returns how many
 * there are. */
int64_t bp_cuda_pool_recorded(bp_cuda_pool_block *out, int64_t capacity);
/* The blocks handed out now and not yet freed, by address; the same
 * convention. */
int64_t bp_cuda_pool_held(bp_cuda_pool_block *out, int64_t capacity);

/* Who has the memory [ptr, ptr + bytes) now. */
enum {
  BP_CUDA_RANGE_ABSENT = 0, /* not all of it in the pool's segments (given
                               back to CUDA, or never the pool's) */
  BP_CUDA_RANGE_FREE = 1,   /* free: no one holds any of it */
  BP_CUDA_RANGE_HELD = 2    /* some of it is handed out: *serial says which
                               hand-out holds its first held byte */
};
int32_t bp_cuda_pool_range_state(const void *ptr, int64_t bytes,
                                 uint64_t *serial);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BITPIPE_CUDA_H */
