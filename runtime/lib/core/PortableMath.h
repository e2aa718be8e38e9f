//===- PortableMath.h - log and cos that every target computes alike -*- C++
//-*-===//
//
// The initial weights are drawn on whichever target holds them (host or
// device) and must be the same bits on every one (docs/training-semantics.md,
// "Initial weights"). libm's log and cos and CUDA's are each within an ulp
// of the true value, but not always the same ulp; and a compiler that fuses
// a * b + c into one rounding (nvcc does by default, GCC does with -mfma)
// changes a last bit where another does not. So the two functions the
// normal draw needs are written here from operations that IEEE 754 rounds
// correctly on every target (+, -, *, /, sqrt), with every multiply-add
// spelled as fma(): no expression is left that a compiler could contract.
// PortableMathTest checks that, and the accuracy (within 2 ulp of libm).
//
// Only the domains the generator needs: log of a positive normal double,
// cos(2 pi u) for u in [0, 1).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_PORTABLEMATH_H
#define BITPIPE_RUNTIME_CORE_PORTABLEMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define BP_HOST_DEVICE __host__ __device__
#else
#define BP_HOST_DEVICE
#endif

namespace bitpipe::runtime::portable {

/// x's bits, and back.
BP_HOST_DEVICE inline uint64_t bitsOf(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
BP_HOST_DEVICE inline double fromBits(uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}

/// c[0] + z (c[1] + z (c[2] + ...)) by Horner's rule, each step one fma.
template <int N>
BP_HOST_DEVICE inline double horner(const double (&c)[N], double z) {
  double p = c[N - 1];
  // Unrolled, so that the coefficients are immediates, not a table.
#if defined(__CUDACC__)
#pragma unroll
#elif defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 32
#endif
  for (int k = N - 2; k >= 0; --k)
    p = std::fma(p, z, c[k]);
  return p;
}

/// Natural log of a positive normal double. x = 2^e * m with m in
/// [sqrt(1/2), sqrt(2)) (exact, by the exponent bits); log m = 2 atanh(s),
/// s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to s^21, whose next
/// term is below 2^-55 of the sum.
BP_HOST_DEVICE inline double log(double x) {
  const uint64_t bits = bitsOf(x);
  int64_t e = static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023;
  // The mantissa with exponent 0: m in [1, 2).
  double m = fromBits((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
  if (m > 1.4142135623730951) { // then m / 2, exactly
    m = fromBits(bitsOf(m) - 0x0010000000000000ULL);
    e += 1;
  }
  const double s = (m - 1.0) / (m + 1.0); // m - 1 is exact (Sterbenz)
  // 1 + z/3 + z^2/5 + ... + z^10/21 in z = s^2: 1/(2k + 1).
  const double oddReciprocals[] = {
      1.0,                 0.3333333333333333,  0.2,
      0.14285714285714285, 0.1111111111111111,  0.09090909090909091,
      0.07692307692307693, 0.06666666666666667, 0.058823529411764705,
      0.05263157894736842, 0.047619047619047616};
  const double logM = (s + s) * horner(oddReciprocals, s * s);
  return std::fma(static_cast<double>(e), 0.6931471805599453, logM);
}

/// cos x for x in [0, pi/4]: the series to x^18 (the next term is below
/// 2^-58), in -x^2: 1/(2k)!.
BP_HOST_DEVICE inline double cosSmall(double x) {
  const double evenFactorials[] = {
      1.0,                   0.5,
      0.041666666666666664,  0.001388888888888889,
      2.48015873015873e-05,  2.755731922398589e-07,
      2.08767569878681e-09,  1.1470745597729725e-11,
      4.779477332387385e-14, 1.5619206968586225e-16};
  return horner(evenFactorials, -(x * x));
}

/// sin x for x in [0, pi/4]: x times the series to x^18, in -x^2:
/// 1/(2k + 1)!.
BP_HOST_DEVICE inline double sinSmall(double x) {
  const double oddFactorials[] = {
      1.0,                    0.16666666666666666,
      0.008333333333333333,   0.0001984126984126984,
      2.7557319223985893e-06, 2.505210838544172e-08,
      1.6059043836821613e-10, 7.647163731819816e-13,
      2.8114572543455206e-15, 8.22063524662433e-18};
  return x * horner(oddFactorials, -(x * x));
}

/// cos(2 pi u) for u in [0, 1). The turn is reduced in u, where every
/// reduction is an exact subtraction (Sterbenz), to an eighth of a turn:
/// cos(2 pi u) = cos(2 pi (1 - u)) = -cos(2 pi (1/2 - u)), and
/// cos(2 pi u) = sin(2 pi (1/4 - u)).
BP_HOST_DEVICE inline double cos2Pi(double u) {
  double r = u > 0.5 ? 1.0 - u : u; // [0, 1/2]
  double sign = 1.0;
  if (r > 0.25) {
    r = 0.5 - r;
    sign = -1.0;
  }
  const double twoPi = 6.283185307179586;
  const double value =
      r > 0.125 ? sinSmall(twoPi * (0.25 - r)) : cosSmall(twoPi * r);
  return sign * value;
}

} // namespace bitpipe::runtime::portable

#endif // BITPIPE_RUNTIME_CORE_PORTABLEMATH_H
