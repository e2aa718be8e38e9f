//===- KernelProfile.h - Time and calls of each kernel ----------*- C++ -*-===//
//
// What `--profile` reports (docs/launching.md, "Profiling a step"): for
// every kernel of the ABI (bitpipe/abi/Kernels.h) and the support calls of
// generated code that do work (bp_fill, bp_alloc, bp_free), how often a
// rank called it and how long it ran. Each CPU kernel opens a KernelTimer
// at its top.
// Times are self times: a kernel that calls another (linear_gelu_fwd calls
// linear_fwd and gelu_fwd) is charged only for what it does outside them,
// so the times of all kernels add up to the time spent in kernels.
//
// Off by default, when a timer costs one load and a branch. Counters are
// atomic, so kernels may run on several threads; one process is one rank.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_KERNELPROFILE_H
#define BITPIPE_RUNTIME_CORE_KERNELPROFILE_H

#include "bitpipe/abi/Kernels.h"

#include <array>
#include <atomic>
#include <cstdint>

namespace bitpipe::runtime {

/// The support calls of runtime.h (bitpipe/abi/Support.def) that are
/// timed with the kernels.
#define BP_PROFILED_SUPPORT(X) X(fill) X(alloc) X(free)

enum class KernelId : int {
#define BP_KERNEL_ID_(kernel) kernel,
  BP_KERNELS(BP_KERNEL_ID_) BP_PROFILED_SUPPORT(BP_KERNEL_ID_)
#undef BP_KERNEL_ID_
};

inline constexpr int kNumKernelIds = 0
#define BP_KERNEL_COUNT_(kernel) +1
    BP_KERNELS(BP_KERNEL_COUNT_) BP_PROFILED_SUPPORT(BP_KERNEL_COUNT_)
#undef BP_KERNEL_COUNT_
    ;

/// The kernel's name in the ABI ("gelu_fwd", "fill").
const char *kernelName(KernelId id);

/// One kernel's totals since the last reset.
struct KernelTotals {
  uint64_t calls = 0;
  uint64_t selfNanoseconds = 0;
};

using KernelProfileTotals = std::array<KernelTotals, kNumKernelIds>;

namespace kernel_profile {
/// Starts or stops timing. Kernels running while it changes may be left
/// out.
void enable(bool on);
bool enabled();
/// Zeroes every kernel's totals (the profile of a run leaves out its first
/// step, where memory is touched for the first time).
void reset();
KernelProfileTotals totals();
} // namespace kernel_profile

/// Times the kernel from its construction to its destruction, less the
/// kernels it calls meanwhile on the same thread.
class KernelTimer {
public:
  explicit KernelTimer(KernelId id) {
    if (kernel_profile::enabled())
      start(id);
  }
  ~KernelTimer() {
    if (active_)
      stop();
  }
  KernelTimer(const KernelTimer &) = delete;
  KernelTimer &operator=(const KernelTimer &) = delete;

private:
  void start(KernelId id);
  void stop();

  bool active_ = false;
  KernelId id_ = KernelId{};
  uint64_t startNs_ = 0;
  uint64_t childNs_ = 0;
  KernelTimer *parent_ = nullptr;
};

} // namespace bitpipe::runtime

/// At the top of a kernel's body: `BP_PROFILE_KERNEL(gelu_fwd);`.
#define BP_PROFILE_KERNEL(kernel)                                              \
  ::bitpipe::runtime::KernelTimer bpKernelTimer_(                              \
      ::bitpipe::runtime::KernelId::kernel)

#endif // BITPIPE_RUNTIME_CORE_KERNELPROFILE_H
