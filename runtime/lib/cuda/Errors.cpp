//===- Errors.cpp - CUDA errors as bp_status_t; bad ids on the device -----===//
//
// Kernels cannot return errors: a launch only queues work. Two kinds are
// turned into bp_status_t here:
//  - CUDA's own (a bad launch configuration, or an asynchronous fault that
//    makes every later call fail), caught by checking after each launch and
//    at bp_cuda_synchronize;
//  - out-of-range token and label ids, and malformed optimizer segments,
//    which only the device sees: kernels record the first one in a device
//    word, and bp_cuda_synchronize reads it.
//
//===----------------------------------------------------------------------===//

#include "EagerModules.h"
#include "Launch.h"
#include "attention/AttentionKernels.h"
#include "linear/LtContext.h"

#include "core/Status.h"

#include <cstdio>
#include <mutex>

namespace bitpipe::runtime::cuda {

static_assert(BP_ERR_DEVICE == static_cast<int>(ErrorCode::DeviceFailure),
              "bitpipe/cuda.h and core/Status.h number errors alike");

bp_status_t checkCuda(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return BP_OK;
  std::fprintf(stderr, "bitpipe: cuda: %s: %s (%s)\n", what,
               cudaGetErrorString(err), cudaGetErrorName(err));
  std::fflush(stderr);
  return BP_ERR_DEVICE;
}

bp_status_t checkLaunch(const char *what) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess)
    return BP_OK;
  std::fprintf(stderr,
               "bitpipe: cuda: %s: %s (%s); raised at its launch, possibly "
               "by earlier asynchronous work\n",
               what, cudaGetErrorString(err), cudaGetErrorName(err));
  std::fflush(stderr);
  return BP_ERR_DEVICE;
}

namespace {

/// The device word and the pinned host word it is read back into.
struct IndexErrorWords {
  int32_t *device = nullptr;
  int32_t *host = nullptr;
};

/// Made by the first call, which bp_cuda_prepare is, before any
/// communicator exists: the one device-wide wait here happens then.
const IndexErrorWords &indexErrorWords() {
  static std::once_flag once;
  static IndexErrorWords words;
  std::call_once(once, [] {
    int32_t *w = nullptr, *h = nullptr;
    // Host-waiting call: start-up.
    if (checkCuda(cudaMalloc(&w, sizeof(int32_t)), "index-error word") != BP_OK)
      return;
    // Host-waiting call: start-up.
    if (checkCuda(cudaMallocHost(&h, sizeof(int32_t)),
                  "index-error word (pinned host copy)") != BP_OK)
      return;
    // Synchronous on purpose: the word must read 0 before any kernel that
    // could record into it, whatever stream that kernel runs on.
    // Host-waiting call: start-up.
    if (checkCuda(cudaMemset(w, 0, sizeof(int32_t)), "index-error word") !=
        BP_OK)
      return;
    // Host-waiting call: start-up.
    if (checkCuda(cudaDeviceSynchronize(), "index-error word") != BP_OK)
      return;
    words = {w, h};
  });
  return words;
}

} // namespace

int32_t *indexErrorWord() { return indexErrorWords().device; }

/// What bp_cuda_synchronize prints for the record of \p who.
static const char *describeReporter(int32_t who) {
  switch (who) {
  case kEmbeddingFwdReporter:
    return "bp_cuda_embedding_fwd(_f32) met a token id outside [0, V); "
           "those rows' outputs are NaN";
  case kEmbeddingBwdReporter:
    return "bp_cuda_embedding_bwd(_f32) met a token id outside [0, V); "
           "those rows' gradients were skipped";
  case kCrossEntropyFwdReporter:
    return "bp_cuda_cross_entropy_fwd(_f32) met a label outside [0, V) that "
           "is not the ignore index; those rows' losses, hence the mean, are "
           "NaN";
  case kCrossEntropyBwdReporter:
    return "bp_cuda_cross_entropy_bwd(_f32) met a label outside [0, V) that "
           "is not the ignore index; those rows' gradients are NaN";
  case kSumSquaresSegmentReporter:
    return "bp_cuda_sum_squares met a segment with a negative offset or "
           "count, or a nonzero reserved field; it was skipped";
  case kAdamWSegmentReporter:
    return "bp_cuda_adamw_step met a segment with a negative offset or "
           "count, or a nonzero reserved field; it was skipped";
  default:
    return "a kernel recorded an unknown index error";
  }
}

} // namespace bitpipe::runtime::cuda

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_cuda_prepare(void) {
  // The runtime's own kernels first: everything after may launch them.
  if (bp_status_t st = loadModulesEagerly(); st != BP_OK)
    return st;
  if (!indexErrorWord())
    return BP_ERR_DEVICE;
  // cuBLASLt's handle, and its workspace on the execution context's stream
  // (bitpipe/cuda.h), which every matrix product uses.
  const linear::CallSite site{"bp_cuda_prepare", 0, 0, 0};
  if (!linear::ltHandle(site) ||
      !linear::workspaceFor(asStream(bp_cuda_stream()), site))
    return BP_ERR_DEVICE;
  if (bp_status_t st = attention::prepareFlashAttention(); st != BP_OK)
    return st;
  return attention::prepareSimtAttention();
}

extern "C" bp_status_t bp_cuda_synchronize(void *stream) {
  const IndexErrorWords &words = indexErrorWords();
  if (!words.device)
    return BP_ERR_DEVICE;
  // The word is read in the stream's order, after its work, into pinned
  // memory, and one wait covers both: a synchronous cudaMemcpy would go
  // through the legacy default stream, which waits for every blocking
  // stream of the device.
  cudaStream_t s = asStream(stream);
  if (bp_status_t st = checkCuda(
          cudaMemcpyAsync(words.host, words.device, sizeof(int32_t),
                          cudaMemcpyDeviceToHost, s),
          "bp_cuda_synchronize");
      st != BP_OK)
    return st;
  if (bp_status_t st =
          checkCuda(cudaStreamSynchronize(s), "bp_cuda_synchronize");
      st != BP_OK)
    return st;
  const int32_t who = *words.host;
  if (who == kNoIndexError)
    return BP_OK;
  std::fprintf(stderr,
               "bitpipe: cuda: %s\n",
               describeReporter(who));
  std::fflush(stderr);
  // Cleared before returning, so that the next step's kernels record
  // afresh; the run's kernels are all on this stream (bitpipe/cuda.h's
  // execution context).
  if (bp_status_t st = checkCuda(
          cudaMemsetAsync(words.device, 0, sizeof(int32_t), s),
          "bp_cuda_synchronize (index-error word)");
      st != BP_OK)
    return st;
  if (bp_status_t st = checkCuda(cudaStreamSynchronize(s),
                                 "bp_cuda_synchronize (index-error word)");
      st != BP_OK)
    return st;
  return BP_ERR_INVALID_ARGUMENT;
}
