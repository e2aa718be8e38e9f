//===- DevicePlacement.cpp - Binding a rank to its GPU --------------------===//

#include "DevicePlacement.h"

#include "comm/mpi/MpiCommunicator.h"

#include <cuda_runtime.h>

#include <cstdio>

namespace bitpipe::runtime {

Expected<RankPlacement> placeRankOnDevice(int worldRank) {
  RankPlacement p;
  BP_ASSIGN(node, nodeRanks(worldRank));
  p.localRank = node.localRank;
  p.localSize = node.localSize;

  cudaError_t err = cudaGetDeviceCount(&p.devices);
  if (err != cudaSuccess)
    return Status::error(ErrorCode::DeviceFailure,
                         formatString("no CUDA device: cudaGetDeviceCount: "
                                      "%s (%s)",
                                      cudaGetErrorString(err),
                                      cudaGetErrorName(err)));
  BP_ASSIGN(plan, planDevice(p.localRank, p.localSize, p.devices));
  p.plan = plan;
  if (plan.sharing) {
    std::vector<std::string> set = arrangeGpuSharing(worldRank);
    if (worldRank == 0) {
      std::string vars;
      for (const std::string &v : set)
        vars += (vars.empty() ? "" : " ") + v;
      std::fprintf(stderr,
                   "bitpipe: %d ranks share %d GPU(s) on rank 0's node; so "
                   "that NCCL accepts them, each rank is a host of its own "
                   "(set here: %s; NCCL_HOSTID=bitpipe-host<rank>; see "
                   "docs/runtime-abi.md)\n",
                   p.localSize, p.devices,
                   vars.empty() ? "nothing, the environment had them" :
                                  vars.c_str());
      std::fflush(stderr);
    }
  }
  err = cudaSetDevice(plan.device);
  if (err != cudaSuccess)
    return Status::error(ErrorCode::DeviceFailure,
                         formatString("selecting CUDA device %d (node-local "
                                      "rank %d): %s (%s)",
                                      plan.device, p.localRank,
                                      cudaGetErrorString(err),
                                      cudaGetErrorName(err)));
  return p;
}

} // namespace bitpipe::runtime
