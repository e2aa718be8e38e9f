//===- DeviceErrors.cpp - CUDA errors as the executor's Status ------------===//

#include "DeviceErrors.h"

#include "bitpipe/cuda.h"

namespace bitpipe::runtime {

Status cudaStatus(cudaError_t err, const std::string &what) {
  if (err == cudaSuccess)
    return Status::ok();
  ErrorCode code = err == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory
                                                    : ErrorCode::DeviceFailure;
  return Status::error(code, formatString("%s: %s (%s)", what.c_str(),
                                          cudaGetErrorString(err),
                                          cudaGetErrorName(err)));
}

Status outOfDeviceMemory(size_t bytes, const std::string &what) {
  size_t freeBytes = 0, totalBytes = 0;
  cudaError_t err = cudaMemGetInfo(&freeBytes, &totalBytes);
  if (err != cudaSuccess)
    return Status::error(ErrorCode::OutOfMemory,
                         formatString("out of device memory: %s needs %zu "
                                      "bytes (cudaMemGetInfo failed too: %s)",
                                      what.c_str(), bytes,
                                      cudaGetErrorString(err)));
  const double MiB = 1048576.0;
  return Status::error(
      ErrorCode::OutOfMemory,
      formatString("out of device memory: %s needs %zu bytes (%.1f MiB); "
                   "the device has %zu bytes (%.1f MiB) free of %zu",
                   what.c_str(), bytes, bytes / MiB, freeBytes,
                   freeBytes / MiB, totalBytes));
}

Status kernelStatus(int status, const std::string &what) {
  switch (status) {
  case BP_OK:
    return Status::ok();
  case BP_ERR_DEVICE:
    // The kernel library printed CUDA's words ("bitpipe: cuda: ...").
    return Status::error(ErrorCode::DeviceFailure,
                         what + ": a CUDA error (see the message above)");
  case BP_ERR_OUT_OF_MEMORY: {
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
      freeBytes = totalBytes = 0;
    return Status::error(ErrorCode::OutOfMemory,
                         formatString("out of device memory: %s could not "
                                      "get its scratch memory; the device has "
                                      "%zu bytes free of %zu",
                                      what.c_str(), freeBytes, totalBytes));
  }
  default:
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("%s: status %d", what.c_str(), status));
  }
}

} // namespace bitpipe::runtime
