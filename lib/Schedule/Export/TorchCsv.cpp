//===- TorchCsv.cpp - Schedule as torch.distributed.pipelining CSV --------===//
//
// torch.distributed.pipelining reads a "compute_only" schedule as CSV: row r
// holds rank r's actions, each `{stage}{type}{microbatch}` with type F
// (forward), B (full backward), I (input-gradient backward) or W (weight
// gradient). Its loader lowers that form to sends and receives itself.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Export.h"

namespace bitpipe::sched {

std::string toTorchCsv(const Schedule &schedule) {
  std::string out;
  for (const std::vector<Action> &actions : schedule.ranks) {
    bool first = true;
    for (const Action &a : actions) {
      const char *type = nullptr;
      switch (a.kind) {
      case ActionKind::Forward:
        type = "F";
        break;
      case ActionKind::Backward:
        type = schedule.splitBackward ? "I" : "B";
        break;
      case ActionKind::WeightGrad:
        type = "W";
        break;
      case ActionKind::AllReduce:
        break; // Not a compute action in torch's compute_only form.
      }
      if (!type)
        continue;
      out += (first ? "" : ",") + std::to_string(a.stage) + type +
             std::to_string(a.microbatch);
      first = false;
    }
    out += "\n";
  }
  return out;
}

} // namespace bitpipe::sched
