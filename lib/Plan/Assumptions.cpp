//===- Assumptions.cpp - What the planner's numbers rest on ---------------===//
//
// The report's first lines: the cluster's size, the memory a plan may use
// and what it leaves free, the compute rate every time is charged at and
// whether the cluster file says it was fitted on real runs, and what MFU
// is computed from (docs/planning.md, "Output"). A prediction is only as
// good as these, so they are printed with it rather than left to the
// files and the docs.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Plan/Report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bitpipe::plan {

namespace {

std::string format(const char *fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

std::string plural(int n, const char *one, const char *many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

/// "calibrated: TEXT", or that the number is an assumption and what
/// follows from it.
std::string provenance(const std::string &calibration, const char *field,
                       const char *consequence) {
  if (!calibration.empty())
    return "calibrated: " + calibration;
  return std::string("assumed, not calibrated on this cluster (its file has "
                     "no calibration.") +
         field + "; docs/calibration.md): " + consequence;
}

} // namespace

std::string formatAssumptions(const PlanResult &result,
                              const sched::Cluster &cluster,
                              const ClusterOrigin &origin) {
  std::string out = "cluster: " + plural(cluster.nodes, "node", "nodes") +
                    " x " + plural(cluster.gpusPerNode, "GPU", "GPUs") + ", " +
                    std::to_string(result.gpus) + " used, from " + origin.path;
  if (origin.fileNodes != cluster.nodes ||
      origin.fileGpusPerNode != cluster.gpusPerNode)
    out += " (which describes " + std::to_string(origin.fileNodes) + " x " +
           std::to_string(origin.fileGpusPerNode) +
           "; the GPUs, their rate and the links are its)";
  out += "\n";

  out += "memory:  " + formatBytes(result.memoryCapBytes) + " per GPU, " +
         formatBytes(result.memoryHeadroomBytes) + " of it (" +
         format("%.1f%%",
                100 * result.memoryHeadroomBytes / result.memoryCapBytes) +
         ") left free for what the memory model does not count (the "
         "runtime's context, workspaces, fragmentation): a budget of " +
         formatBytes(result.memoryBudgetBytes()) + "\n";

  // How compute is priced, and what that leaves MFU: at the one
  // achievable rate, MFU reaches that fraction only where no rank waits
  // (bubbles and exposed communication are the gap); by kernel shape, no
  // such bound.
  std::string rate, mfu;
  if (const std::optional<sched::KernelRates> &rates = cluster.kernelRates) {
    double lo = HUGE_VAL, hi = 0;
    for (const sched::LinearRate &r : rates->linearEntries())
      for (double x : {r.forward, r.inputGrad, r.weightGrad}) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    rate = "by kernel shape, measured (" +
           (rates->measured().empty() ? std::string("the file does not say how")
                                      : rates->measured()) +
           "): linear products " + formatFlops(lo) + "/s to " +
           formatFlops(hi) + "/s per GPU by shape, the memory-bound rest " +
           formatFlops(rates->other()) + "/s";
    mfu = "(GPUs x peak " + formatFlops(cluster.peakBf16Flops) + "/s)";
  } else {
    rate = formatFlops(cluster.achievableFlops()) + "/s per GPU (" +
           formatFlops(cluster.peakBf16Flops) + "/s peak x " +
           format("%g", cluster.achievableFraction) + " achievable)";
    mfu = "(GPUs x peak), at most " + format("%g", cluster.achievableFraction) +
          " (no bubble, no exposed communication)";
  }
  out += "compute: " + rate + ", " +
         provenance(cluster.computeCalibration, "compute",
                    "step times, tokens/s and MFU scale with it") +
         "\n";
  out += "model:   " + formatFlops(result.modelFlopsPerToken) +
         " per token (forward + backward); MFU = that x tokens/s / " + mfu +
         "\n";
  out += "links:   " +
         provenance(cluster.linkCalibration, "links",
                    "transfer and all-reduce times are the file's figures") +
         "\n";
  // What the compile commands get: a mirror pair's sum is charged as it
  // will run (docs/data-parallel.md, "Two levels").
  out += std::string("sync:    ") +
         (result.gradientSync == sched::GradientSync::Hierarchical
              ? "a stage held by two ranks of a pipeline sums in two levels "
                "(reduce-scatter in the copy, its halves across the copies, "
                "all-gather)"
              : "one all-reduce over every holder of a stage") +
         " (--gradient-sync " + sched::gradientSyncName(result.gradientSync) +
         ")\n";
  return out;
}

} // namespace bitpipe::plan
