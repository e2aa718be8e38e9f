//===- CheckedArithmetic.h - int64 products that cannot wrap ----*- C++ -*-===//
//
// The one place where the compiler multiplies sizes it was given (model
// dimensions, tensor shapes, FLOP and byte counts): a product that leaves
// int64 is reported instead of wrapping to a negative or zero count
// (docs/models.md, "Limits").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_CHECKEDARITHMETIC_H
#define BITPIPE_SUPPORT_CHECKEDARITHMETIC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>

namespace bitpipe {

/// The largest count any size, product or sum may reach: 2^63 - 1.
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

/// The product of `factors`, or nullopt when it leaves int64.
inline std::optional<int64_t> checkedProduct(llvm::ArrayRef<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors)
    if (llvm::MulOverflow(product, factor, product))
      return std::nullopt;
  return product;
}
inline std::optional<int64_t>
checkedProduct(std::initializer_list<int64_t> factors) {
  return checkedProduct(llvm::ArrayRef<int64_t>(factors));
}

/// The sum of `terms`, or nullopt when it leaves int64.
inline std::optional<int64_t> checkedSum(std::initializer_list<int64_t> terms) {
  int64_t sum = 0;
  for (int64_t term : terms)
    if (llvm::AddOverflow(sum, term, sum))
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

#endif // BITPIPE_SUPPORT_CHECKEDARITHMETIC_H
