//===- KernelProfile.cpp - Time and calls of each kernel ------------------===//

#include "core/KernelProfile.h"

#include <chrono>

namespace bitpipe::runtime {

namespace {

std::atomic<bool> gEnabled{false};

struct AtomicTotals {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> selfNanoseconds{0};
};
std::array<AtomicTotals, kNumKernelIds> gTotals;

/// The innermost timer running on this thread: a kernel called from it
/// hands it its whole time, which the caller then leaves out of its own.
thread_local KernelTimer *tInnermost = nullptr;

uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

} // namespace

const char *kernelName(KernelId id) {
  static constexpr const char *kNames[] = {
#define BP_KERNEL_NAME_(kernel) #kernel,
      BP_KERNELS(BP_KERNEL_NAME_) BP_PROFILED_SUPPORT(BP_KERNEL_NAME_)
#undef BP_KERNEL_NAME_
  };
  int i = static_cast<int>(id);
  return i >= 0 && i < kNumKernelIds ? kNames[i] : "?";
}

namespace kernel_profile {

void enable(bool on) { gEnabled.store(on, std::memory_order_relaxed); }

bool enabled() { return gEnabled.load(std::memory_order_relaxed); }

void reset() {
  for (AtomicTotals &t : gTotals) {
    t.calls.store(0, std::memory_order_relaxed);
    t.selfNanoseconds.store(0, std::memory_order_relaxed);
  }
}

KernelProfileTotals totals() {
  KernelProfileTotals out;
  for (int i = 0; i < kNumKernelIds; ++i) {
    out[i].calls = gTotals[i].calls.load(std::memory_order_relaxed);
    out[i].selfNanoseconds =
        gTotals[i].selfNanoseconds.load(std::memory_order_relaxed);
  }
  return out;
}

} // namespace kernel_profile

void KernelTimer::start(KernelId id) {
  active_ = true;
  id_ = id;
  parent_ = tInnermost;
  tInnermost = this;
  startNs_ = nowNs();
}

void KernelTimer::stop() {
  uint64_t elapsed = nowNs() - startNs_;
  tInnermost = parent_;
  if (parent_)
    parent_->childNs_ += elapsed;
  AtomicTotals &t = gTotals[static_cast<int>(id_)];
  t.calls.fetch_add(1, std::memory_order_relaxed);
  t.selfNanoseconds.fetch_add(elapsed > childNs_ ? elapsed - childNs_ : 0,
                              std::memory_order_relaxed);
}

} // namespace bitpipe::runtime
