//===- Linear.cpp - runtime.h's linear layers on the CUDA target ----------===//
//
// The functions compiled stage functions call (runtime.h's bp_linear_*),
// implemented on the device: each runs bitpipe/cuda.h's cuBLASLt linear
// layer of the context's precision on the context's stream (Dispatch.h).
// The parameter gradients (dw, db) are fp32 accumulators in both precisions.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

#include "bitpipe/runtime.h"

using bitpipe::runtime::cuda::asBf16Bits;
using bitpipe::runtime::cuda::byPrecision;

extern "C" {

bp_status_t bp_linear_fwd(const float *x, const float *w, const float *b,
                          float *y, int64_t N, int64_t In, int64_t Out) {
  return byPrecision(
      "bp_linear_fwd",
      [&](void *s) {
        return bp_cuda_linear_fwd_f32(x, w, b, y, N, In, Out, s);
      },
      [&](void *s) {
        return bp_cuda_linear_fwd(asBf16Bits(x), asBf16Bits(w), asBf16Bits(b),
                                  asBf16Bits(y), N, In, Out, s);
      });
}

bp_status_t bp_linear_gelu_fwd(const float *x, const float *w, const float *b,
                               float *y, float *pre, int64_t N, int64_t In,
                               int64_t Out) {
  return byPrecision(
      "bp_linear_gelu_fwd",
      [&](void *s) {
        return bp_cuda_linear_gelu_fwd_f32(x, w, b, y, pre, N, In, Out, s);
      },
      [&](void *s) {
        return bp_cuda_linear_gelu_fwd(asBf16Bits(x), asBf16Bits(w),
                                       asBf16Bits(b), asBf16Bits(y),
                                       asBf16Bits(pre), N, In, Out, s);
      });
}

bp_status_t bp_linear_bwd_input(const float *dy, const float *w, float *dx,
                                int64_t N, int64_t In, int64_t Out) {
  return byPrecision(
      "bp_linear_bwd_input",
      [&](void *s) {
        return bp_cuda_linear_bwd_input_f32(dy, w, dx, N, In, Out, s);
      },
      [&](void *s) {
        return bp_cuda_linear_bwd_input(asBf16Bits(dy), asBf16Bits(w),
                                        asBf16Bits(dx), N, In, Out, s);
      });
}

bp_status_t bp_linear_bwd_input_gelu(const float *dy, const float *w,
                                     const float *pre, float *dx, int64_t N,
                                     int64_t In, int64_t Out) {
  return byPrecision(
      "bp_linear_bwd_input_gelu",
      [&](void *s) {
        return bp_cuda_linear_bwd_input_gelu_f32(dy, w, pre, dx, N, In, Out,
                                                 s);
      },
      [&](void *s) {
        return bp_cuda_linear_bwd_input_gelu(asBf16Bits(dy), asBf16Bits(w),
                                             asBf16Bits(pre), asBf16Bits(dx),
                                             N, In, Out, s);
      });
}

bp_status_t bp_linear_bwd_weight(const float *dy, const float *x, float *dw,
                                 float *db, int64_t N, int64_t In,
                                 int64_t Out) {
  // dw and db are fp32 accumulators in both precisions.
  return byPrecision(
      "bp_linear_bwd_weight",
      [&](void *s) {
        return bp_cuda_linear_bwd_weight_f32(dy, x, dw, db, N, In, Out, s);
      },
      [&](void *s) {
        return bp_cuda_linear_bwd_weight(asBf16Bits(dy), asBf16Bits(x), dw, db,
                                         N, In, Out, s);
      });
}

} // extern "C"
