//===- CudaNcclCalls.h - NcclDeviceCalls with NCCL and CUDA -----*- C++ -*-===//
//
// The real device layer of NcclCommunicator: NCCL communicators on the
// current CUDA device, each with a non-blocking stream of its own, made
// with it and destroyed at the end, and events in recycled slots. Built
// only with CUDA (and NCCL).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_NCCL_CUDANCCLCALLS_H
#define BITPIPE_RUNTIME_COMM_NCCL_CUDANCCLCALLS_H

#include "NcclDeviceCalls.h"

#include <memory>

namespace bitpipe::runtime {

/// The calls on the current device (set it first: DevicePlacement.h),
/// ordered against \p computeStream (a cudaStream_t: the backend's).
Expected<std::unique_ptr<NcclDeviceCalls>>
createCudaNcclCalls(void *computeStream);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_NCCL_CUDANCCLCALLS_H
