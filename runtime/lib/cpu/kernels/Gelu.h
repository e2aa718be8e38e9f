//===- Gelu.h - The tanh GELU's loops, for the fused products ---*- C++ -*-===//
//
// bp_gelu_fwd / bp_gelu_bwd split their elements over the kernel's
// threads; the GELU-fused matrix products (Linear.cpp) run the same loops
// on the rows a thread's product just wrote, in the same task, so a fused
// call computes what the two kernels in sequence compute, bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_GELU_H
#define BITPIPE_RUNTIME_CPU_KERNELS_GELU_H

#include <cstdint>

namespace bitpipe::runtime::cpu {

/// y[i] = gelu(x[i]) for i in [first, last).
void geluForwardRange(const float *x, float *y, int64_t first, int64_t last);

/// dx[i] = dy[i] * gelu'(x[i]) for i in [first, last); dx may alias dy.
void geluBackwardRange(const float *dy, const float *x, float *dx,
                       int64_t first, int64_t last);

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_GELU_H
