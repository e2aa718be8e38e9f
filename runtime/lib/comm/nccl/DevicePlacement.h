//===- DevicePlacement.h - Binding a rank to its GPU ------------*- C++ -*-===//
//
// Collective over MPI_COMM_WORLD, before any other CUDA or NCCL call of the
// process: the node-local rank (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)
// picks the device (GpuSharing.h), cudaSetDevice makes it current, and
// ranks that share a GPU get NCCL_HOSTID (announced once, by rank 0).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_NCCL_DEVICEPLACEMENT_H
#define BITPIPE_RUNTIME_COMM_NCCL_DEVICEPLACEMENT_H

#include "GpuSharing.h"

namespace bitpipe::runtime {

struct RankPlacement {
  int localRank = 0, localSize = 1, devices = 0;
  DevicePlan plan;
};

/// \p worldRank is the caller's rank in MPI_COMM_WORLD.
Expected<RankPlacement> placeRankOnDevice(int worldRank);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_NCCL_DEVICEPLACEMENT_H
