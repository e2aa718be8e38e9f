//===- CudaParamArrays.cpp - The parameter store in device memory ---------===//
//
// The store that CudaParamArrays.h describes; on a GPU, bench/gpu/check.sh
// runs its tests (CudaBackendTests).
//
//===----------------------------------------------------------------------===//

#include "CudaParamArrays.h"

#include "DeviceErrors.h"
#include "SegmentTable.h"

#include "core/Random.h"
#include "train/AdamW.h"

#include <climits>
#include <limits>

namespace bitpipe::runtime {

Status CudaParamArrays::allocate(void **out, size_t bytes, const char *what) {
  *out = nullptr;
  if (bytes == 0)
    return Status::ok();
  // Host-waiting call: start-up (the store is made before the first step).
  cudaError_t err = cudaMalloc(out, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError(); // not sticky: clear it for later checks
    return outOfDeviceMemory(bytes, std::string("the parameter store's ") +
                                        what);
  }
  if (err == cudaSuccess)
    deviceBytes_ += static_cast<int64_t>(bytes);
  return cudaStatus(err, std::string("allocating the parameter store's ") +
                             what);
}

void CudaParamArrays::allocateHostImage() {
  size_t n = static_cast<size_t>(n_);
  hostParams_.assign(n, 0.0f);
  hostM_.assign(n, 0.0f);
  hostV_.assign(n, 0.0f);
}

Expected<std::unique_ptr<ParamArrays>>
CudaParamArrays::create(const ParamLayout &layout, Precision precision,
                        cudaStream_t stream) {
  std::unique_ptr<CudaParamArrays> a(new CudaParamArrays);
  a->layout_ = layout;
  a->n_ = layout.numFloats;
  a->stream_ = stream;
  if (layout.all.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return Status::error(ErrorCode::InvalidArgument,
                         "too many parameter tensors for one segment table");
  const size_t floats = static_cast<size_t>(a->n_) * sizeof(float);
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->master_), floats,
                     "fp32 master weights"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->grads_), floats,
                     "fp32 gradient accumulators"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->m_), floats,
                     "first moments"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->v_), floats,
                     "second moments"));
  if (precision == Precision::Bf16)
    BP_TRY(a->allocate(reinterpret_cast<void **>(&a->compute_),
                       static_cast<size_t>(a->n_) * sizeof(bp_bf16_t),
                       "bf16 weights"));
  // The segment tables, once: the layout is fixed for the run.
  std::vector<bp_cuda_segment> all = cudaSegments(layout.all);
  std::vector<bp_cuda_segment> norm = cudaSegments(layout.norm);
  a->numAll_ = static_cast<int32_t>(all.size());
  a->numNorm_ = static_cast<int32_t>(norm.size());
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->allSegments_),
                     all.size() * sizeof(bp_cuda_segment), "segment table"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->normSegments_),
                     norm.size() * sizeof(bp_cuda_segment), "segment table"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->normDevice_), sizeof(double),
                     "norm"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->invalidDevice_),
                     3 * all.size() * sizeof(int64_t), "state check"));
  // Host-waiting call: start-up.
  BP_TRY(cudaStatus(cudaMallocHost(reinterpret_cast<void **>(&a->normPinned_),
                                   sizeof(double)),
                    "allocating the norm's pinned slot"));
  // Everything on the store's stream, which does not synchronise with the
  // legacy default stream (cudaMemset / cudaMemcpy would race with it).
  if (!all.empty())
    BP_TRY(cudaStatus(cudaMemcpyAsync(a->allSegments_, all.data(),
                                      all.size() * sizeof(bp_cuda_segment),
                                      cudaMemcpyHostToDevice, stream),
                      "uploading the segment table"));
  if (!norm.empty())
    BP_TRY(cudaStatus(cudaMemcpyAsync(a->normSegments_, norm.data(),
                                      norm.size() * sizeof(bp_cuda_segment),
                                      cudaMemcpyHostToDevice, stream),
                      "uploading the segment table"));
  if (floats)
    for (float *p : {a->master_, a->grads_, a->m_, a->v_})
      BP_TRY(cudaStatus(cudaMemsetAsync(p, 0, floats, stream),
                        "zeroing the parameter store"));
  // The tables' host vectors go out of scope here.
  BP_TRY(cudaStatus(cudaStreamSynchronize(stream),
                    "initialising the parameter store"));
  return std::unique_ptr<ParamArrays>(std::move(a));
}

CudaParamArrays::~CudaParamArrays() {
  // Work queued on the stream may still read these arrays.
  if (stream_)
    (void)cudaStreamSynchronize(stream_);
  for (void *p :
       {static_cast<void *>(master_), static_cast<void *>(grads_),
        static_cast<void *>(m_), static_cast<void *>(v_),
        static_cast<void *>(compute_), static_cast<void *>(allSegments_),
        static_cast<void *>(normSegments_), static_cast<void *>(normDevice_),
        static_cast<void *>(invalidDevice_)})
    if (p)
      (void)cudaFree(p); // Host-waiting call: teardown.
  if (normPinned_)
    (void)cudaFreeHost(normPinned_); // Host-waiting call: teardown.
}

Status CudaParamArrays::initialize(uint64_t seed) {
  const size_t bytes = static_cast<size_t>(n_) * sizeof(float);
  if (bytes == 0)
    return Status::ok();
  // Zero everywhere first: the alignment gaps, the zero-initialised
  // tensors, the moments and the accumulators.
  for (float *p : {master_, grads_, m_, v_})
    BP_TRY(cudaStatus(cudaMemsetAsync(p, 0, bytes, stream_),
                      "zeroing the parameter store"));
  for (const ParamSegment &seg : layout_.all) {
    if (seg.count == 0)
      continue;
    switch (seg.init) {
    case InitKind::Normal:
      BP_TRY(kernelStatus(bp_cuda_init_normal(master_ + seg.offset, seg.count,
                                              seg.stddev, seed,
                                              hashName(seg.name), 0, stream_),
                          "drawing the initial weights of '" + seg.name + "'"));
      break;
    case InitKind::Zeros:
      break;
    case InitKind::Ones:
      BP_TRY(kernelStatus(
          bp_cuda_fill_f32(master_ + seg.offset, 1.0f, seg.count, stream_),
          "initialising '" + seg.name + "'"));
      break;
    }
  }
  if (compute_)
    BP_TRY(
        kernelStatus(bp_cuda_cast_f32_to_bf16(master_, compute_, n_, stream_),
                     "the bf16 copy of the weights"));
  return cudaStatus(cudaStreamSynchronize(stream_),
                    "initialising the parameters");
}

Expected<std::vector<std::optional<InvalidState>>> CudaParamArrays::findInvalid() {
  std::vector<std::optional<InvalidState>> found(layout_.all.size());
  if (found.empty())
    return found;
  BP_TRY(kernelStatus(bp_cuda_find_invalid(master_, m_, v_, allSegments_,
                                           numAll_, invalidDevice_, stream_),
                      "checking the parameters"));
  std::vector<int64_t> first(3 * found.size());
  BP_TRY(cudaStatus(cudaMemcpyAsync(first.data(), invalidDevice_,
                                    first.size() * sizeof(int64_t),
                                    cudaMemcpyDeviceToHost, stream_),
                    "reading the parameter check"));
  BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                    "reading the parameter check"));
  const StateArray arrays[3] = {StateArray::Weights, StateArray::FirstMoments,
                                StateArray::SecondMoments};
  const float *data[3] = {master_, m_, v_};
  for (size_t s = 0; s < found.size(); ++s)
    for (int k = 0; k < 3; ++k) {
      const int64_t index = first[3 * s + k];
      if (index == INT64_MAX)
        continue;
      // The one value, for the message (on the store's stream: a peer's
      // NCCL kernels may still run, so nothing device-wide).
      float value = 0.0f;
      BP_TRY(cudaStatus(
          cudaMemcpyAsync(&value, data[k] + layout_.all[s].offset + index,
                          sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "reading an invalid parameter value"));
      BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                        "reading an invalid parameter value"));
      found[s] = InvalidState{arrays[k], index, value};
      break;
    }
  return found;
}

Status CudaParamArrays::toHost() {
  allocateHostImage();
  const size_t bytes = static_cast<size_t>(n_) * sizeof(float);
  if (bytes) {
    BP_TRY(cudaStatus(cudaMemcpyAsync(hostParams_.data(), master_, bytes,
                                      cudaMemcpyDeviceToHost, stream_),
                      "downloading the master weights"));
    BP_TRY(cudaStatus(cudaMemcpyAsync(hostM_.data(), m_, bytes,
                                      cudaMemcpyDeviceToHost, stream_),
                      "downloading the first moments"));
    BP_TRY(cudaStatus(cudaMemcpyAsync(hostV_.data(), v_, bytes,
                                      cudaMemcpyDeviceToHost, stream_),
                      "downloading the second moments"));
  }
  return cudaStatus(cudaStreamSynchronize(stream_),
                    "downloading the parameter store");
}

Status CudaParamArrays::toTarget() {
  if (hostParams_.size() != static_cast<size_t>(n_))
    return Status::error(ErrorCode::InvalidArgument,
                         "internal: the parameter store's host image is gone "
                         "(toTarget without toHost)");
  const size_t bytes = static_cast<size_t>(n_) * sizeof(float);
  if (bytes) {
    BP_TRY(cudaStatus(cudaMemcpyAsync(master_, hostParams_.data(), bytes,
                                      cudaMemcpyHostToDevice, stream_),
                      "uploading the master weights"));
    BP_TRY(cudaStatus(cudaMemcpyAsync(m_, hostM_.data(), bytes,
                                      cudaMemcpyHostToDevice, stream_),
                      "uploading the first moments"));
    BP_TRY(cudaStatus(cudaMemcpyAsync(v_, hostV_.data(), bytes,
                                      cudaMemcpyHostToDevice, stream_),
                      "uploading the second moments"));
    BP_TRY(cudaStatus(cudaMemsetAsync(grads_, 0, bytes, stream_),
                      "zeroing the gradient accumulators"));
    if (compute_)
      BP_TRY(kernelStatus(bp_cuda_cast_f32_to_bf16(master_, compute_, n_,
                                                   stream_),
                          "the bf16 copy of the weights"));
  }
  // Pageable host memory: the copies must finish before it goes.
  BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                    "uploading the parameter store"));
  releaseHost();
  return Status::ok();
}

void CudaParamArrays::releaseHost() {
  std::vector<float>().swap(hostParams_);
  std::vector<float>().swap(hostM_);
  std::vector<float>().swap(hostV_);
}

void *CudaParamArrays::computeParams(int64_t offset) {
  if (compute_)
    return compute_ + offset;
  return master_ + offset;
}

Status CudaParamArrays::zeroGradients() {
  if (n_ == 0)
    return Status::ok();
  return cudaStatus(cudaMemsetAsync(grads_, 0,
                                    static_cast<size_t>(n_) * sizeof(float),
                                    stream_),
                    "zeroing the gradient accumulators");
}

Expected<double> CudaParamArrays::sumSquaredGradients(int numMicroBatches) {
  if (numMicroBatches <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("AdamW: %d micro-batches; need at least "
                                      "one",
                                      numMicroBatches));
  if (numNorm_ == 0)
    return 0.0;
  // (grad * (1 / n))^2, as the CPU's AdamW::sumSquaredGradients scales.
  BP_TRY(kernelStatus(bp_cuda_sum_squares(grads_, normSegments_, numNorm_,
                                          1.0 / numMicroBatches, normDevice_,
                                          stream_),
                      "the gradient norm"));
  BP_TRY(cudaStatus(cudaMemcpyAsync(normPinned_, normDevice_, sizeof(double),
                                    cudaMemcpyDeviceToHost, stream_),
                    "reading the gradient norm"));
  BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                    "reading the gradient norm"));
  return *normPinned_;
}

Status CudaParamArrays::adamwStep(AdamW &optimizer, int numMicroBatches,
                                  double globalSumSquares) {
  // The step counts on every rank, whether or not it holds parameters.
  BP_ASSIGN(c, optimizer.beginStep(numMicroBatches, globalSumSquares));
  if (numAll_ == 0)
    return Status::ok();
  bp_cuda_adamw_constants constants = cudaConstants(c);
  return kernelStatus(bp_cuda_adamw_step(master_, grads_, m_, v_, compute_,
                                         allSegments_, numAll_, &constants,
                                         stream_),
                      "the AdamW step");
}

} // namespace bitpipe::runtime
