//===- Linear.cpp - runtime.h's linear layers on the CUDA target ----------===//
//
// The functions compiled stage functions call (runtime.h's bp_linear_*),
// implemented on the device: each runs bitpipe/cuda.h's cuBLASLt linear
// layer of the context's precision on the context's stream (cuda.h, "The
// execution context"). Under BP_PRECISION_BF16 the activation and weight
// pointers that runtime.h types `float *` hold bf16 bits and are passed on
// as such; the parameter gradients (dw, db) are fp32 in both precisions.
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"
#include "bitpipe/program.h"
#include "bitpipe/runtime.h"

// The fused linear + GELU entry points that runtime.h gains with the CUDA
// target (bitpipe-lower-to-runtime emits them for a linear whose output
// feeds a GELU). Declared here until this branch's runtime.h has them; the
// declarations must then match and can go.
extern "C" {
bp_status_t bp_linear_gelu_fwd(const float *x, const float *w, const float *b,
                               float *y, float *pre, int64_t N, int64_t In,
                               int64_t Out);
bp_status_t bp_linear_bwd_input_gelu(const float *dy, const float *w,
                                     const float *pre, float *dx, int64_t N,
                                     int64_t In, int64_t Out);
}

namespace {

/// runtime.h's `float *` as what it holds under bf16: the same buffer.
const bp_bf16_t *bits(const float *p) {
  return reinterpret_cast<const bp_bf16_t *>(p);
}
bp_bf16_t *bits(float *p) { return reinterpret_cast<bp_bf16_t *>(p); }

bool bf16() { return bp_cuda_precision() == BP_PRECISION_BF16; }

} // namespace

extern "C" {

bp_status_t bp_linear_fwd(const float *x, const float *w, const float *b,
                          float *y, int64_t N, int64_t In, int64_t Out) {
  if (bf16())
    return bp_cuda_linear_fwd(bits(x), bits(w), bits(b), bits(y), N, In, Out,
                              bp_cuda_stream());
  return bp_cuda_linear_fwd_f32(x, w, b, y, N, In, Out, bp_cuda_stream());
}

bp_status_t bp_linear_gelu_fwd(const float *x, const float *w, const float *b,
                               float *y, float *pre, int64_t N, int64_t In,
                               int64_t Out) {
  if (bf16())
    return bp_cuda_linear_gelu_fwd(bits(x), bits(w), bits(b), bits(y),
                                   bits(pre), N, In, Out, bp_cuda_stream());
  return bp_cuda_linear_gelu_fwd_f32(x, w, b, y, pre, N, In, Out,
                                     bp_cuda_stream());
}

bp_status_t bp_linear_bwd_input(const float *dy, const float *w, float *dx,
                                int64_t N, int64_t In, int64_t Out) {
  if (bf16())
    return bp_cuda_linear_bwd_input(bits(dy), bits(w), bits(dx), N, In, Out,
                                    bp_cuda_stream());
  return bp_cuda_linear_bwd_input_f32(dy, w, dx, N, In, Out, bp_cuda_stream());
}

bp_status_t bp_linear_bwd_input_gelu(const float *dy, const float *w,
                                     const float *pre, float *dx, int64_t N,
                                     int64_t In, int64_t Out) {
  if (bf16())
    return bp_cuda_linear_bwd_input_gelu(bits(dy), bits(w), bits(pre), bits(dx),
                                         N, In, Out, bp_cuda_stream());
  return bp_cuda_linear_bwd_input_gelu_f32(dy, w, pre, dx, N, In, Out,
                                           bp_cuda_stream());
}

bp_status_t bp_linear_bwd_weight(const float *dy, const float *x, float *dw,
                                 float *db, int64_t N, int64_t In,
                                 int64_t Out) {
  // dw and db are fp32 accumulators in both precisions.
  if (bf16())
    return bp_cuda_linear_bwd_weight(bits(dy), bits(x), dw, db, N, In, Out,
                                     bp_cuda_stream());
  return bp_cuda_linear_bwd_weight_f32(dy, x, dw, db, N, In, Out,
                                       bp_cuda_stream());
}

} // extern "C"
