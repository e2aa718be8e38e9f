/*===- bitpipe/cuda.h - C ABI of the runtime's CUDA kernels --------*- C -*-===*\
|*                                                                            *|
|* The device counterparts of runtime.h's element-wise and row-wise kernels   *|
|* (embedding, layer norm, GELU, residual add, cross-entropy), and the        *|
|* device memory pool they and their callers allocate from. Matrix products,  *|
|* attention and communication are not here yet.                              *|
|*                                                                            *|
|* NONE OF THIS HAS RUN ON A GPU YET: it was written and compiled on a        *|
|* machine without one, and its tests skip there (see                         *|
|* runtime/unittests/cuda and bench/gpu/check-kernels.sh).                    *|
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

/* A bfloat16 value: the upper 16 bits of the fp32 with the same sign and
 * exponent (conversions round to nearest even). */
typedef uint16_t bp_bf16_t;

/*===-----------------------------------------------------------------------===
 * Embedding: out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]
 *   tokens [B, T] int32; wte [V, H], wpe [P >= T, H], out [B, T, H] bf16.
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_embedding_fwd(const int32_t *tokens, const bp_bf16_t *wte,
                                  const bp_bf16_t *wpe, bp_bf16_t *out,
                                  int64_t B, int64_t T, int64_t H, int64_t V,
                                  void *stream);

/* Accumulates, in fp32, dwte[tokens[b, t], :] += dout[b, t, :] (atomic adds:
 * repeated tokens sum, in an unspecified order, so dwte may differ from run
 * to run in the last bits) and dwpe[t, :] += sum_b dout[b, t, :] (one thread
 * per element, summing b in order: deterministic).
 *   dout [B, T, H] bf16; dwte [V, H], dwpe [P, H] fp32. */
bp_status_t bp_cuda_embedding_bwd(const int32_t *tokens, const bp_bf16_t *dout,
                                  float *dwte, float *dwpe, int64_t B,
                                  int64_t T, int64_t H, int64_t V,
                                  void *stream);

/*===-----------------------------------------------------------------------===
 * Layer norm over the last dimension (biased variance, as PyTorch):
 *   x, y [N, H] bf16; gamma, beta [H] bf16; mean, rstd [N] fp32, written.
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_layer_norm_fwd(const bp_bf16_t *x, const bp_bf16_t *gamma,
                                   const bp_bf16_t *beta, bp_bf16_t *y,
                                   float *mean, float *rstd, int64_t N,
                                   int64_t H, float eps, void *stream);

/* Writes dx [N, H] bf16; accumulates dgamma [H] and dbeta [H] in fp32 (in a
 * fixed order: deterministic). mean and rstd are the forward's. */
bp_status_t bp_cuda_layer_norm_bwd(const bp_bf16_t *dy, const bp_bf16_t *x,
                                   const bp_bf16_t *gamma, const float *mean,
                                   const float *rstd, bp_bf16_t *dx,
                                   float *dgamma, float *dbeta, int64_t N,
                                   int64_t H, void *stream);

/*===-----------------------------------------------------------------------===
 * GELU, tanh form: x, y [n] bf16; y may alias x.
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_gelu_fwd(const bp_bf16_t *x, bp_bf16_t *y, int64_t n,
                             void *stream);

/* Writes dx = dy * gelu'(x), bf16; dx may alias dy. */
bp_status_t bp_cuda_gelu_bwd(const bp_bf16_t *dy, const bp_bf16_t *x,
                             bp_bf16_t *dx, int64_t n, void *stream);

/*===-----------------------------------------------------------------------===
 * Residual add: out = a + b (summed in fp32, rounded once), all [n] bf16;
 * out may alias a or b. As on the CPU, it also sums fanned-out gradients.
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_add(const bp_bf16_t *a, const bp_bf16_t *b,
                        bp_bf16_t *out, int64_t n, void *stream);

/*===-----------------------------------------------------------------------===
 * Cross-entropy, mean over the rows whose label is not ignore_index (0 when
 * there are none):
 *   logits [N, V] bf16; labels [N] int32; loss: one fp32 on the device,
 *   written. The mean of the per-row losses is summed in double in a fixed
 *   order, as the CPU kernel sums it.
 *===----------------------------------------------------------------------===*/
bp_status_t bp_cuda_cross_entropy_fwd(const bp_bf16_t *logits,
                                      const int32_t *labels, float *loss,
                                      int64_t N, int64_t V,
                                      int32_t ignore_index, void *stream);

/* Writes dlogits [N, V] bf16: dloss * (softmax - onehot) / count on labelled
 * rows, 0 on ignored rows. dloss is a host value. dlogits may alias logits. */
bp_status_t bp_cuda_cross_entropy_bwd(const bp_bf16_t *logits,
                                      const int32_t *labels, float dloss,
                                      bp_bf16_t *dlogits, int64_t N, int64_t V,
                                      int32_t ignore_index, void *stream);

/*===-----------------------------------------------------------------------===
 * Errors.
 *===----------------------------------------------------------------------===*/

/* Waits for `stream`, then reports what its kernels could not return:
 * BP_ERR_DEVICE for an asynchronous CUDA error, BP_ERR_INVALID_ARGUMENT
 * (after printing which kernel) if a kernel met an out-of-range token or
 * label id since the last call, which clears that record; else BP_OK. */
bp_status_t bp_cuda_synchronize(void *stream);

/*===-----------------------------------------------------------------------===
 * Device memory: a caching pool, as bp_alloc is for host memory. Freed blocks
 * are kept by their exact rounded size (512 B units below 1 MiB, 128 KiB
 * above) and handed out again without cudaMalloc (which is slow and may
 * synchronize the device): training repeats the same shapes
 * every micro-batch, so after the first step nothing is allocated from CUDA.
 *
 * Stream order, as cudaFreeAsync: bp_cuda_free(ptr, s) means "every use of
 * ptr is enqueued on s (or ordered before it)"; the block is then handed out
 * again only to bp_cuda_alloc(..., s), whose later work on s runs after those
 * uses. Synchronize a stream before destroying it: blocks freed on it stay
 * cached under its handle, which CUDA may give to a new stream. When
 * cudaMalloc fails, the pool waits for the device, returns every cached
 * block to CUDA and tries once more.
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BITPIPE_CUDA_H */
