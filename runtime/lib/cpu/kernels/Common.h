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

/// A float buffer from malloc. operator new would abort on failure without
/// exceptions; malloc lets the kernel return BP_ERR_OUT_OF_MEMORY instead.
class ScratchBuffer {
public:
  explicit ScratchBuffer(int64_t count)
      : data(static_cast<float *>(
            std::malloc(static_cast<size_t>(count) * sizeof(float)))) {}
  ~ScratchBuffer() { std::free(data); }
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;

  bool ok() const { return data != nullptr; }
  float *get() const { return data; }

private:
  float *data;
};

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H
