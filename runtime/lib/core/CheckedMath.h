//===- CheckedMath.h - Sizes that cannot wrap -------------------*- C++ -*-===//
//
// Byte counts and element counts come from files the user hands over
// (manifests, checkpoints): a product that wraps around 2^64 would allocate
// a small buffer and then write past it. Every size the runtime derives from
// such numbers goes through these, and a false return becomes an error
// naming what was being sized.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_CHECKEDMATH_H
#define BITPIPE_RUNTIME_CORE_CHECKEDMATH_H

#include <cstdint>

namespace bitpipe::runtime {

/// *out = a + b; false (and *out untouched) when it does not fit.
template <typename T> bool checkedAdd(T a, T b, T *out) {
  T r;
  if (__builtin_add_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}

/// *out = a * b; false (and *out untouched) when it does not fit.
template <typename T> bool checkedMul(T a, T b, T *out) {
  T r;
  if (__builtin_mul_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_CHECKEDMATH_H
