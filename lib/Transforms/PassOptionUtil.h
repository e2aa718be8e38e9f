//===- PassOptionUtil.h - Reading pass options into requests ----*- C++ -*-===//
//
// Options a user leaves out are left to the schedule registry's defaults,
// so a conversion into its request must tell "not given" from a value.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_TRANSFORMS_PASSOPTIONUTIL_H
#define BITPIPE_LIB_TRANSFORMS_PASSOPTIONUTIL_H

#include "mlir/Pass/PassOptions.h"

#include <optional>

namespace bitpipe {

/// The option's value when the user gave it, else nullopt. An option parsed
/// from text knows whether it was given; one set from an options struct
/// (a pipeline building its passes) does not, and counts as given when it
/// differs from `unset`, its default.
template <typename T>
std::optional<T> givenValue(const mlir::detail::PassOptions::Option<T> &option,
                            T unset) {
  if (option.hasValue() || option.getValue() != unset)
    return option.getValue();
  return std::nullopt;
}

} // namespace bitpipe

#endif // BITPIPE_LIB_TRANSFORMS_PASSOPTIONUTIL_H
