//===- GpuSharing.cpp - Which GPU a rank uses, and sharing one ------------===//

#include "GpuSharing.h"

#include <cstdlib>

namespace bitpipe::runtime {

Expected<DevicePlan> planDevice(int localRank, int localSize, int devices) {
  if (devices <= 0)
    return Status::error(ErrorCode::DeviceFailure,
                         "no CUDA device: the driver sees none (check "
                         "CUDA_VISIBLE_DEVICES)");
  if (localRank < 0 || localRank >= localSize)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("node-local rank %d of %d", localRank,
                                      localSize));
  DevicePlan plan;
  plan.device = localRank % devices;
  plan.sharing = localSize > devices;
  return plan;
}

std::vector<std::string> arrangeGpuSharing(int worldRank) {
  const std::string hostId = "bitpipe-host" + std::to_string(worldRank);
  const std::pair<const char *, std::string> wanted[] = {
      {"NCCL_HOSTID", hostId},
      {"NCCL_SOCKET_IFNAME", "lo"},
      {"NCCL_IB_DISABLE", "1"}};
  std::vector<std::string> set;
  for (const auto &[name, value] : wanted) {
    if (std::getenv(name))
      continue; // the user's choice stands
    ::setenv(name, value.c_str(), /*overwrite=*/0);
    set.push_back(std::string(name) + "=" + value);
  }
  return set;
}

} // namespace bitpipe::runtime
