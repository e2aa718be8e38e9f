//===- LtContext.cpp - The process's cuBLASLt handle and workspace --------===//
//
// LtContext.h's handle and workspace, and the error reports that the
// linear layers share.
//
//===----------------------------------------------------------------------===//

#include "LtContext.h"

#include <cstdio>
#include <map>
#include <mutex>

namespace bitpipe::runtime::cuda::linear {

void reportError(const CallSite &site, const char *what) {
  std::fprintf(stderr, "bitpipe: cuda: %s (N=%lld, In=%lld, Out=%lld): %s\n",
               site.function, static_cast<long long>(site.N),
               static_cast<long long>(site.In),
               static_cast<long long>(site.Out), what);
  std::fflush(stderr);
}

bp_status_t checkCublas(cublasStatus_t status, const char *call,
                        const CallSite &site) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return BP_OK;
  char what[512];
  std::snprintf(what, sizeof(what), "%s failed: %s (%s)", call,
                cublasLtGetStatusName(status), cublasLtGetStatusString(status));
  reportError(site, what);
  return BP_ERR_DEVICE;
}

cublasLtHandle_t ltHandle(const CallSite &site) {
  static std::once_flag once;
  static cublasLtHandle_t handle = nullptr;
  bool triedNow = false;
  std::call_once(once, [&] {
    triedNow = true;
    cublasLtHandle_t h = nullptr;
    if (checkCublas(cublasLtCreate(&h), "cublasLtCreate", site) == BP_OK)
      handle = h;
  });
  if (!handle && !triedNow)
    reportError(site, "no cuBLASLt handle (cublasLtCreate failed earlier)");
  return handle;
}

void *workspaceFor(cudaStream_t stream, const CallSite &site) {
  static std::mutex mutex;
  // Never destroyed: the blocks stay with the pool's own lifetime.
  static auto *workspaces = new std::map<cudaStream_t, void *>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = workspaces->find(stream);
  if (it != workspaces->end())
    return it->second;
  // From the pool on this stream, so it is counted in the pool's
  // statistics (peak device memory) like every other device allocation.
  void *ws = bp_cuda_alloc(static_cast<int64_t>(kWorkspaceBytes), stream);
  if (!ws) {
    reportError(site, "could not allocate the cuBLASLt workspace (32 MiB)");
    return nullptr;
  }
  workspaces->emplace(stream, ws);
  return ws;
}

uint32_t alignmentOf(const void *p) {
  uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

} // namespace bitpipe::runtime::cuda::linear
