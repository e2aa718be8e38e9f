//===- GpuSharing.h - Which GPU a rank uses, and sharing one ----*- C++ -*-===//
//
// Rank -> GPU (docs/runtime-abi.md, "Communication on each target"): the
// node-local rank modulo the node's visible devices. When a node has more
// ranks than devices, ranks share a GPU (tests on one card), which NCCL
// refuses within one communicator ("duplicate GPU") unless every rank looks
// like a host of its own: NCCL_HOSTID. Plain logic, no CUDA or MPI, so
// that the CPU tests check it; DevicePlacement.h applies it.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_NCCL_GPUSHARING_H
#define BITPIPE_RUNTIME_COMM_NCCL_GPUSHARING_H

#include "core/Status.h"

#include <string>
#include <vector>

namespace bitpipe::runtime {

struct DevicePlan {
  int device = 0;
  /// More ranks than devices on this node.
  bool sharing = false;
};

/// The device of node-local rank \p localRank of \p localSize, with
/// \p devices visible; an error when there is none.
Expected<DevicePlan> planDevice(int localRank, int localSize, int devices);

/// For ranks that share a GPU, before any NCCL call: NCCL_HOSTID=
/// bitpipe-host<worldRank>, and (so that NCCL's traffic between these
/// "hosts" goes over the loopback interface) NCCL_SOCKET_IFNAME=lo and
/// NCCL_IB_DISABLE=1, each only where the environment does not set it.
/// Returns "NAME=VALUE" for each variable it set.
std::vector<std::string> arrangeGpuSharing(int worldRank);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_NCCL_GPUSHARING_H
