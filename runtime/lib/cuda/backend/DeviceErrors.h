//===- DeviceErrors.h - CUDA errors as the executor's Status ----*- C++ -*-===//
//
// The CUDA backend's messages for what goes wrong on the device: a CUDA
// error named by CUDA's own words, and out of memory with the bytes asked
// and what the device had free (cudaMemGetInfo).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_BACKEND_DEVICEERRORS_H
#define BITPIPE_RUNTIME_CUDA_BACKEND_DEVICEERRORS_H

#include "core/Status.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace bitpipe::runtime {

/// Ok for cudaSuccess; else "WHAT: <CUDA's message> (<its name>)".
Status cudaStatus(cudaError_t err, const std::string &what);

/// "out of device memory: WHAT needs N bytes; the device has F free of T".
Status outOfDeviceMemory(size_t bytes, const std::string &what);

/// A bitpipe/cuda.h status as a Status (\p what names the call).
Status kernelStatus(int status, const std::string &what);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CUDA_BACKEND_DEVICEERRORS_H
