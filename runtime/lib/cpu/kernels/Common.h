//===- Common.h - Helpers shared by the CPU kernels -------------*- C++ -*-===//
//
// Argument checks (core/ArgChecks.h, shared with the CUDA kernels) and
// scratch memory from malloc. The runtime is built without exceptions, so
// failures are reported as bp_status_t, never thrown.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H
#define BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H

#include "bitpipe/runtime.h"
#include "core/ArgChecks.h"

#include <cstdint>
#include <cstdlib>

namespace bitpipe::runtime::cpu {

using runtime::allNonNull;
using runtime::allPositive;

/// A buffer of \p T from malloc. operator new would abort on failure
/// without exceptions; malloc lets the kernel return BP_ERR_OUT_OF_MEMORY
/// instead.
template <typename T> class Scratch {
public:
  explicit Scratch(int64_t count)
      : data(static_cast<T *>(std::malloc(
            static_cast<size_t>(count > 0 ? count : 1) * sizeof(T)))) {}
  ~Scratch() { std::free(data); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  bool ok() const { return data != nullptr; }
  T *get() const { return data; }

private:
  T *data;
};

using ScratchBuffer = Scratch<float>;

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H
