//===- VectorErf.h - erf(x) that loops vectorize ----------------*- C++ -*-===//
//
// libm's erff is a call the compiler cannot vectorize; the exact GELU
// (BERT's, GeluErf.cpp) spent its time in it. vectorErf is erf in float
// arithmetic and selects only, like vectorExp (VectorExp.h; the files that
// use it are compiled with -fno-trapping-math for the same reason):
//   |x| < 1:      erf(x) = x P(x^2)
//   1 <= |x| < 4: erf(x) = 1 - exp(-x^2) Q(|x|)      (Q = erfc e^{x^2})
//   |x| >= 4:     erf(x) = +-1                        (erfc(4) = 1.5e-8)
// with P of degree 6 and Q of degree 9, least-squares fits on 4,000
// Chebyshev nodes of each interval in double (the coefficients below,
// rounded to float). Both branches are computed and one is selected. Over
// [-6, 6], evaluated in float, within 1.5e-7 of erf (2.5 float ulps near
// 1, where libm's float erf is within 3e-8); relative error under 1.8e-7
// for |x| < 1, so that erf(x) ~ 1.128 x keeps its digits near 0.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_VECTORERF_H
#define BITPIPE_RUNTIME_CPU_KERNELS_VECTORERF_H

#include "VectorExp.h"

namespace bitpipe::runtime::cpu {

inline float vectorErf(float x) {
  const float a = x < 0.0f ? -x : x;
  // Near 0: an odd series, x P(x^2).
  const float t = a * a;
  float p = 7.882497448008507e-05f;
  p = p * t - 0.0008018855005502701f;
  p = p * t + 0.005189312156289816f;
  p = p * t - 0.02685432881116867f;
  p = p * t + 0.11283597350120544f;
  p = p * t - 0.3761262595653534f;
  p = p * t + 1.1283791065216064f;
  const float small = a * p;
  // Away from 0: 1 - erfc, erfc = exp(-x^2) Q(x) on [1, 4].
  const float c = a > 4.0f ? 4.0f : a;
  float q = -6.3860857153485995e-06f;
  q = q * c + 0.00016744447930250317f;
  q = q * c - 0.0019656061194837093f;
  q = q * c + 0.013671518303453922f;
  q = q * c - 0.06290837377309799f;
  q = q * c + 0.20279435813426971f;
  q = q * c - 0.4739140570163727f;
  q = q * c + 0.8199871778488159f;
  q = q * c - 1.0576153993606567f;
  q = q * c + 0.9873726963996887f;
  const float large = 1.0f - vectorExp(-c * c) * q;
  float r = a < 1.0f ? small : large;
  r = a >= 4.0f ? 1.0f : r;
  return x < 0.0f ? -r : r;
}

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_VECTORERF_H
