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
  const double z = s * s;
  // 1 + z/3 + z^2/5 + ... + z^10/21, by Horner's rule.
  double p = 0.047619047619047616;          // 1/21
  p = std::fma(p, z, 0.05263157894736842);  // 1/19
  p = std::fma(p, z, 0.058823529411764705); // 1/17
  p = std::fma(p, z, 0.06666666666666667);  // 1/15
  p = std::fma(p, z, 0.07692307692307693);  // 1/13
  p = std::fma(p, z, 0.09090909090909091);  // 1/11
  p = std::fma(p, z, 0.1111111111111111);   // 1/9
  p = std::fma(p, z, 0.14285714285714285);  // 1/7
  p = std::fma(p, z, 0.2);                  // 1/5
  p = std::fma(p, z, 0.3333333333333333);   // 1/3
  p = std::fma(p, z, 1.0);
  const double logM = (s + s) * p;
  return std::fma(static_cast<double>(e), 0.6931471805599453, logM);
}

/// cos x for x in [0, pi/4]: the series to x^18 (the next term is below
/// 2^-58).
BP_HOST_DEVICE inline double cosSmall(double x) {
  const double w = x * x;
  double p = 1.5619206968586225e-16;           // 1/18!
  p = std::fma(p, -w, 4.779477332387385e-14);  // 1/16!
  p = std::fma(p, -w, 1.1470745597729725e-11); // 1/14!
  p = std::fma(p, -w, 2.08767569878681e-09);   // 1/12!
  p = std::fma(p, -w, 2.755731922398589e-07);  // 1/10!
  p = std::fma(p, -w, 2.48015873015873e-05);   // 1/8!
  p = std::fma(p, -w, 0.001388888888888889);   // 1/6!
  p = std::fma(p, -w, 0.041666666666666664);   // 1/4!
  p = std::fma(p, -w, 0.5);                    // 1/2!
  return std::fma(p, -w, 1.0);
}

/// sin x for x in [0, pi/4]: x times the series to x^18.
BP_HOST_DEVICE inline double sinSmall(double x) {
  const double w = x * x;
  double p = 8.22063524662433e-18;             // 1/19!
  p = std::fma(p, -w, 2.8114572543455206e-15); // 1/17!
  p = std::fma(p, -w, 7.647163731819816e-13);  // 1/15!
  p = std::fma(p, -w, 1.6059043836821613e-10); // 1/13!
  p = std::fma(p, -w, 2.505210838544172e-08);  // 1/11!
  p = std::fma(p, -w, 2.7557319223985893e-06); // 1/9!
  p = std::fma(p, -w, 0.0001984126984126984);  // 1/7!
  p = std::fma(p, -w, 0.008333333333333333);   // 1/5!
  p = std::fma(p, -w, 0.16666666666666666);    // 1/3!
  p = std::fma(p, -w, 1.0);
  return x * p;
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
