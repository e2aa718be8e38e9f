//===- PendingOps.cpp - What a communicator still waits for ---------------===//

#include "PendingOps.h"

namespace bitpipe::runtime {

std::string describePendingOp(const PendingOp &op,
                              const std::vector<int> &groupRanks) {
  const std::string size = formatString(
      "%lld x %s", static_cast<long long>(op.count), dtypeName(op.dtype));
  const std::string readBy = op.reader.empty() ? "" : ", read by " + op.reader;
  if (op.peer >= 0) {
    const std::string tag = op.tag ? formatString("tag %d, ", *op.tag) : "";
    return formatString("%s with rank %d (%s%s)%s", op.op.c_str(), op.peer,
                        tag.c_str(), size.c_str(), readBy.c_str());
  }
  if (!op.group)
    return formatString("%s (%s)%s", op.op.c_str(), size.c_str(),
                        readBy.c_str());
  std::string ranks;
  for (int r : groupRanks)
    ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  return formatString("%s over group %d (ranks %s, %s)%s", op.op.c_str(),
                      *op.group, ranks.c_str(), size.c_str(), readBy.c_str());
}

Status unknownRequest(int rank, const char *use, RequestHandle h) {
  return Status::error(ErrorCode::InvalidArgument,
                       formatString("rank %d: %s unknown or already "
                                    "completed request %lld",
                                    rank, use, static_cast<long long>(h.id)));
}

} // namespace bitpipe::runtime
