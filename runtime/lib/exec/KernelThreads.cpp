//===- KernelThreads.cpp - How many threads a rank's kernels use ----------===//

#include "KernelThreads.h"

#include <algorithm>
#include <cstdlib>
#include <sched.h>
#include <unistd.h>

namespace bitpipe::runtime {

namespace {
/// The most threads a rank takes from an environment variable or the
/// flag: far above any machine's cores, low enough to catch a typo.
constexpr int kMaxThreads = 4096;

Expected<int> parseCount(const std::string &name, const std::string &text) {
  char *end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > kMaxThreads)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("%s is '%s'; expected a whole number "
                                      "of threads from 1 to %d",
                                      name.c_str(), text.c_str(), kMaxThreads));
  return static_cast<int>(value);
}
} // namespace

Expected<KernelThreads> chooseKernelThreads(const ThreadsContext &c) {
  if (c.flag > kMaxThreads)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("--threads %lld: expected at most %d",
                                      static_cast<long long>(c.flag),
                                      kMaxThreads));
  if (c.flag > 0)
    return KernelThreads{static_cast<int>(c.flag), "--threads"};
  for (auto [name, value] : {std::pair{"OMP_NUM_THREADS", &c.ompEnv},
                             std::pair{"OPENBLAS_NUM_THREADS", &c.blasEnv}})
    if (*value && !(*value)->empty()) {
      Expected<int> n = parseCount(name, **value);
      if (!n.isOk())
        return n.status();
      return KernelThreads{*n, name};
    }
  const int cpus = std::max(1, c.affinityCpus);
  // A launcher that bound the rank gave it its mask; a mask of the whole
  // machine is shared by every rank of the node.
  if (cpus < c.onlineCpus)
    return KernelThreads{cpus, "the rank's CPU binding"};
  const int ranks = std::max(1, c.localRanks);
  return KernelThreads{std::max(1, cpus / ranks),
                       ranks > 1 ? "the machine's CPUs over its ranks"
                                 : "the machine's CPUs"};
}

ThreadsContext currentThreadsContext(int64_t flag, int localRanks) {
  ThreadsContext c;
  c.flag = flag;
  if (const char *v = std::getenv("OMP_NUM_THREADS"))
    c.ompEnv = v;
  if (const char *v = std::getenv("OPENBLAS_NUM_THREADS"))
    c.blasEnv = v;
  cpu_set_t set;
  CPU_ZERO(&set);
  c.onlineCpus = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  c.affinityCpus = sched_getaffinity(0, sizeof set, &set) == 0
                       ? std::max(1, CPU_COUNT(&set))
                       : c.onlineCpus;
  c.localRanks = localRanks;
  return c;
}

} // namespace bitpipe::runtime
