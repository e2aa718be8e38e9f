//===- StepGraphPolicy.cpp - When a step is captured or replayed ----------===//

#include "StepGraphPolicy.h"

#include <algorithm>

namespace bitpipe::runtime {

namespace {

/// NCCL_VERSION(2, 9, 6): the first release that captures its collective,
/// point-to-point and group operations into CUDA graphs.
constexpr int kNcclCaptureVersion = 20906;
/// CUDA 11.3: what NCCL needs to be captured; also well after the
/// external event records the stage calls' spans use (11.1).
constexpr int kCudaCaptureVersion = 11030;

/// A version code as "X.Y.Z" (NCCL_VERSION's: X * 10000 + Y * 100 + Z from
/// 2.9 on, X * 1000 + Y * 100 + Z before) or "X.Y" (CUDA's: X * 1000 +
/// Y * 10).
std::string versionText(int code, bool nccl) {
  if (nccl && code >= 10000)
    return formatString("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  if (nccl)
    return formatString("%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
  return formatString("%d.%d", code / 1000, code % 1000 / 10);
}

} // namespace

const char *graphVerdictName(GraphVerdict v) {
  switch (v) {
  case GraphVerdict::Ready:
    return "ready";
  case GraphVerdict::Unsteady:
    return "unsteady";
  case GraphVerdict::Stale:
    return "stale";
  case GraphVerdict::Unusable:
    return "unusable";
  }
  return "?";
}

std::string stepGraphsUnusableReason(const StepGraphRunFacts &facts) {
  if (facts.trace)
    return "--trace records every transfer's and all-reduce's device span "
           "from events that a replayed graph does not record";
  if (facts.syncEachCall)
    return "BITPIPE_CUDA_SYNC=1 waits for the device after every stage call, "
           "which a capture cannot hold";
  if (facts.cudaDriverVersion < kCudaCaptureVersion)
    return formatString("the CUDA driver is %s; graphs of NCCL operations "
                        "need %s",
                        versionText(facts.cudaDriverVersion, false).c_str(),
                        versionText(kCudaCaptureVersion, false).c_str());
  if (facts.usesNccl) {
    const int oldest =
        std::min(facts.ncclHeaderVersion, facts.ncclLibraryVersion);
    if (oldest < kNcclCaptureVersion)
      return formatString(
          "NCCL %s (headers %s, library %s) cannot capture its operations; "
          "%s can",
          versionText(oldest, true).c_str(),
          versionText(facts.ncclHeaderVersion, true).c_str(),
          versionText(facts.ncclLibraryVersion, true).c_str(),
          versionText(kNcclCaptureVersion, true).c_str());
  }
  return "";
}

StepGraphPolicy::StepGraphPolicy(StepGraphSettings settings)
    : settings_(settings), eagerNeeded_(settings.eagerSteps) {}

GraphVerdict StepGraphPolicy::verdict(const StepGraphFacts &facts) const {
  if (!facts.unusable.empty())
    return GraphVerdict::Unusable;
  if (state_ == State::Holding)
    return facts.mismatch.empty() ? GraphVerdict::Ready : GraphVerdict::Stale;
  return facts.lastStepSteady ? GraphVerdict::Ready : GraphVerdict::Unsteady;
}

StepGraphPolicy::Decision StepGraphPolicy::decide(GraphVerdict agreed,
                                                  int64_t step) {
  Decision d;
  const std::string eagerFromNow = "every step runs eagerly from now on";
  switch (state_) {
  case State::Off:
    return d;
  case State::Warming:
    if (agreed == GraphVerdict::Unusable) {
      state_ = State::Off;
      d.change = eagerFromNow;
      return d;
    }
    if (eagerRun_ >= eagerNeeded_ && agreed == GraphVerdict::Ready) {
      state_ = State::Holding;
      ++captures_;
      d.mode = StepMode::Capture;
      return d;
    }
    if (eagerRun_ >= settings_.maxEagerSteps) {
      state_ = State::Off;
      d.change = formatString("still not steady after %d eager steps; %s",
                              eagerRun_, eagerFromNow.c_str());
      return d;
    }
    ++eagerRun_;
    return d;
  case State::Holding:
    if (agreed == GraphVerdict::Ready) {
      d.mode = StepMode::Replay;
      return d;
    }
    d.dropGraph = true;
    if (agreed == GraphVerdict::Unusable ||
        captures_ >= settings_.maxCaptures) {
      state_ = State::Off;
      d.change = agreed == GraphVerdict::Unusable
                     ? eagerFromNow
                     : formatString("%d captures made; %s", captures_,
                                    eagerFromNow.c_str());
      return d;
    }
    // This step eagerly, the next one captured again if it is steady.
    state_ = State::Warming;
    eagerNeeded_ = 1;
    eagerRun_ = 1;
    d.change = formatString("step %lld runs eagerly and the next steady "
                            "step is captured again",
                            static_cast<long long>(step));
    return d;
  }
  return d;
}

} // namespace bitpipe::runtime
