//===- PendingOps.cpp - What a communicator still waits for ---------------===//

#include "PendingOps.h"

namespace bitpipe::runtime {

/// "group 5 (ranks 1,3, 4 x f32)".
static std::string describeGroup(GroupId group,
                                 const std::vector<int> &groupRanks,
                                 const std::string &size) {
  std::string ranks;
  for (int r : groupRanks)
    ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  return formatString("group %d (ranks %s, %s)", group, ranks.c_str(),
                      size.c_str());
}

static std::string elements(int64_t count, DType dtype) {
  return formatString("%lld x %s", static_cast<long long>(count),
                      dtypeName(dtype));
}

std::string describeTwoLevelStep(TwoLevelStep step, GroupId group,
                                 const std::vector<int> &groupRanks,
                                 int64_t count, DType dtype) {
  const char *what = "?";
  switch (step) {
  case TwoLevelStep::ReduceScatter:
    what = "step 1 of 3: reduce-scatter within the copy";
    break;
  case TwoLevelStep::AllReduceAcross:
    what = "step 2 of 3: allreduce across copies";
    break;
  case TwoLevelStep::AllGather:
    what = "step 3 of 3: allgather within the copy";
    break;
  case TwoLevelStep::Tail:
    what = "the tail: allreduce";
    break;
  }
  return formatString(
      "%s over %s", what,
      describeGroup(group, groupRanks, elements(count, dtype)).c_str());
}

std::string describePendingOp(const PendingOp &op,
                              const std::vector<int> &groupRanks) {
  const std::string size = elements(op.count, op.dtype);
  // Where it stands, then who reads it.
  const std::string after = (op.step.empty() ? "" : ", " + op.step) +
                            (op.reader.empty() ? "" : ", read by " + op.reader);
  if (op.peer >= 0) {
    const std::string tag = op.tag ? formatString("tag %d, ", *op.tag) : "";
    return formatString("%s with rank %d (%s%s)%s", op.op.c_str(), op.peer,
                        tag.c_str(), size.c_str(), after.c_str());
  }
  if (!op.group)
    return formatString("%s (%s)%s", op.op.c_str(), size.c_str(),
                        after.c_str());
  return formatString("%s over %s%s", op.op.c_str(),
                      describeGroup(*op.group, groupRanks, size).c_str(),
                      after.c_str());
}

Status unknownRequest(int rank, const char *use, RequestHandle h) {
  return Status::error(ErrorCode::InvalidArgument,
                       formatString("rank %d: %s unknown or already "
                                    "completed request %lld",
                                    rank, use, static_cast<long long>(h.id)));
}

} // namespace bitpipe::runtime
