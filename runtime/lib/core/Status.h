//===- Status.h - The runtime's errors --------------------------*- C++ -*-===//
//
// The runtime's error type is the base library's (bitpipe/base/Status.h),
// the one every fallible call below it returns too (the output writer, the
// JSON reader's wrapper core/Json.h). These declarations let the runtime's
// code, and code that uses the runtime's namespace, name it as its own:
// bitpipe::runtime::Status is bitpipe::base::Status. ErrorCode's values are
// the C ABI's bp_status_t (runtime.h).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_STATUS_H
#define BITPIPE_RUNTIME_CORE_STATUS_H

#include "bitpipe/base/Status.h"

namespace bitpipe::runtime {

using base::ErrorCode;
using base::errorCodeName;
using base::Expected;
using base::formatString;
using base::Status;

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_STATUS_H
