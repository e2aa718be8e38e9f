//===- KernelProfileReport.cpp - The --profile table ----------------------===//

#include "train/KernelProfileReport.h"

#include "core/Status.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

namespace bitpipe::runtime {

// Its bytes as they lie: the ranks of a run are one build on one kind of
// machine, as the step's other reports assume.
static_assert(std::is_trivially_copyable_v<RankKernelProfile>);

std::string serializeKernelProfile(const RankKernelProfile &profile) {
  return std::string(reinterpret_cast<const char *>(&profile), sizeof profile);
}

std::optional<RankKernelProfile> parseKernelProfile(const std::string &bytes) {
  RankKernelProfile p;
  if (bytes.size() != sizeof p)
    return std::nullopt;
  std::memcpy(&p, bytes.data(), sizeof p);
  return p;
}

std::string formatKernelProfile(const RankKernelProfile &profile, int rank,
                                int64_t firstStep, int top) {
  const double steps = profile.steps > 0 ? double(profile.steps) : 1.0;
  const double stepMs = profile.seconds * 1e3 / steps;
  std::vector<int> called;
  for (int i = 0; i < kNumKernelIds; ++i)
    if (profile.totals[i].calls > 0)
      called.push_back(i);
  std::stable_sort(called.begin(), called.end(), [&](int a, int b) {
    return profile.totals[a].selfNanoseconds >
           profile.totals[b].selfNanoseconds;
  });

  auto share = [&](double ms) {
    return stepMs > 0 ? formatString("%5.1f%%", 100.0 * ms / stepMs)
                      : std::string("    -");
  };
  std::string out = formatString(
      "bitpipe: kernel profile, rank %d, per step (steps %lld-%lld; step "
      "%.3f s):\n"
      "  %-24s %8s %10s %7s %10s\n",
      rank, static_cast<long long>(firstStep),
      static_cast<long long>(firstStep + profile.steps - 1), stepMs * 1e-3,
      "kernel", "calls", "ms/step", "share", "us/call");
  double allCalls = 0, allMs = 0;
  for (size_t k = 0; k < called.size(); ++k) {
    const KernelTotals &t = profile.totals[called[k]];
    const double calls = double(t.calls) / steps;
    const double ms = double(t.selfNanoseconds) * 1e-6 / steps;
    allCalls += calls;
    allMs += ms;
    if (static_cast<int>(k) >= top)
      continue;
    out += formatString("  %-24s %8.0f %10.1f %7s %10.1f\n",
                        kernelName(static_cast<KernelId>(called[k])), calls, ms,
                        share(ms).c_str(),
                        double(t.selfNanoseconds) * 1e-3 / double(t.calls));
  }
  if (static_cast<int>(called.size()) > top)
    out += formatString("  (%zu more kernels)\n", called.size() - top);
  out += formatString("  %-24s %8.0f %10.1f %7s\n", "all kernels", allCalls,
                      allMs, share(allMs).c_str());
  const double outside = std::max(0.0, stepMs - allMs);
  out += formatString("  %-24s %8s %10.1f %7s   the executor: transfers "
                      "and their waits, the all-reduce, the optimizer, "
                      "inputs\n",
                      "outside kernels", "", outside, share(outside).c_str());
  out += formatString("  %-24s %8.0f per step\n", "page faults",
                      double(profile.pageFaults) / steps);
  return out;
}

} // namespace bitpipe::runtime
