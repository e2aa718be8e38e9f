//===- VectorExp.h - exp(x) that loops vectorize ----------------*- C++ -*-===//
//
// libm's expf / tanhf are calls the compiler cannot vectorize, and the
// element-wise kernels (GELU above all: a quarter of a GPT step on one
// core, bench/peers; then SwiGLU's sigmoid and the softmax weights of
// attention and cross-entropy) spend their time in them. The files that
// use it are compiled with -fno-trapping-math (runtime/lib/cpu/
// CMakeLists.txt), without which the selects below stay branches and the
// loops stay scalar. vectorExp is exp in float
// arithmetic only (no call, no table, no branch), so that a loop over it
// becomes SIMD code:
//   exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2]
// with ln 2 split in two (Cody and Waite) so that r is exact to float
// precision, exp(r) by its Taylor polynomial to degree 7 (truncation
// below 6e-9 relative, a tenth of float's ulp), and 2^n built in the
// exponent bits. Within 2 ulp of exp over the clamped range; x is clamped
// to [-87, 88] so that 2^n stays a normal float: exp(-87) = 1.6e-38
// stands in for smaller values, exp(88) = 1.65e38 for larger ones.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_VECTOREXP_H
#define BITPIPE_RUNTIME_CPU_KERNELS_VECTOREXP_H

#include <cstdint>
#include <cstring>

namespace bitpipe::runtime::cpu {

inline float vectorExp(float x) {
  // Two selects, not std::min/max: those are branches the vectorizer
  // cannot if-convert under IEEE rules.
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  // Round to nearest by the 1.5 * 2^23 trick (exact for |t| < 2^22).
  constexpr float kShift = 12582912.0f;
  const float n = (x * 1.44269504088896341f + kShift) - kShift;
  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with trailing zero bits so that n *
  // kLn2Hi is exact.
  constexpr float kLn2Hi = 0.693145751953125f;
  constexpr float kLn2Lo = 1.42860682030941723212e-6f;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  // Horner's rule on 1 + r + r^2/2! + ... + r^7/7!.
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/// exp(x) for the weights of a softmax, x = a logit less the row's maximum
/// (so x <= 0): 0 below -87, where vectorExp would clamp, as a masked
/// logit's -inf must give. A weight under exp(-87) = 1.6e-38 beside the
/// maximum's 1 changes no float sum.
inline float softmaxWeight(float x) {
  const float e = vectorExp(x);
  return x < -87.0f ? 0.0f : e;
}

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_VECTOREXP_H
