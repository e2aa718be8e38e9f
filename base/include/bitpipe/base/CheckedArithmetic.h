//===- CheckedArithmetic.h - Sizes and counts that cannot wrap --*- C++ -*-===//
//
// The one place where sizes someone else chose are added and multiplied:
// the compiler's model dimensions, tensor shapes, FLOP and byte counts
// (docs/models.md, "Limits"), and the runtime's byte and element counts
// from the files the user hands over (manifests, checkpoints). A sum or
// product that wraps would be a negative or zero count in the compiler and
// a small buffer written past in the runtime: every such result goes
// through these, and one that does not fit is reported (naming what was
// being sized) or, for counts an interface must return, saturated.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_CHECKEDARITHMETIC_H
#define BITPIPE_BASE_CHECKEDARITHMETIC_H

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>

namespace bitpipe {

/// *out = a + b; false (and *out untouched) when it does not fit in T.
template <typename T> bool checkedAdd(T a, T b, T *out) {
  T r;
  if (__builtin_add_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}

/// *out = a * b; false (and *out untouched) when it does not fit in T.
template <typename T> bool checkedMul(T a, T b, T *out) {
  T r;
  if (__builtin_mul_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}

/// The largest count any size, product or sum may reach: 2^63 - 1.
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

/// The product of `factors` (any range of int64_t), or nullopt when it
/// leaves int64.
template <typename Range>
std::optional<int64_t> checkedProduct(const Range &factors) {
  int64_t product = 1;
  for (int64_t factor : factors)
    if (!checkedMul(product, factor, &product))
      return std::nullopt;
  return product;
}
inline std::optional<int64_t>
checkedProduct(std::initializer_list<int64_t> factors) {
  return checkedProduct<std::initializer_list<int64_t>>(factors);
}

/// The sum of `terms`, or nullopt when it leaves int64.
inline std::optional<int64_t> checkedSum(std::initializer_list<int64_t> terms) {
  int64_t sum = 0;
  for (int64_t term : terms)
    if (!checkedAdd(sum, term, &sum))
      return std::nullopt;
  return sum;
}

/// The product of non-negative `factors`, saturated at kMaxCount (for counts
/// an interface must return; a caller treats kMaxCount as "too large").
inline int64_t saturatingProduct(std::initializer_list<int64_t> factors) {
  std::optional<int64_t> product = checkedProduct(factors);
  return product ? *product : kMaxCount;
}

/// The sum of non-negative `terms`, saturated at kMaxCount.
inline int64_t saturatingSum(std::initializer_list<int64_t> terms) {
  std::optional<int64_t> sum = checkedSum(terms);
  return sum ? *sum : kMaxCount;
}

} // namespace bitpipe

#endif // BITPIPE_BASE_CHECKEDARITHMETIC_H
