//===- CudaParamArrays.cpp - The parameter store in device memory ---------===//
//
// The store that CudaParamArrays.h describes; on a GPU, bench/gpu/check.sh
// runs its tests (CudaBackendTests).
//
//===----------------------------------------------------------------------===//

#include "CudaParamArrays.h"

#include "DeviceErrors.h"
#include "OwnedParts.h"
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
  hostParams_.assign(static_cast<size_t>(n_), 0.0f);
  hostM_.assign(static_cast<size_t>(sizes_.moments), 0.0f);
  hostV_.assign(static_cast<size_t>(sizes_.moments), 0.0f);
}

Expected<std::unique_ptr<ParamArrays>>
CudaParamArrays::create(const ParamLayout &layout, Precision precision,
                        cudaStream_t stream) {
  std::unique_ptr<CudaParamArrays> a(new CudaParamArrays);
  a->layout_ = layout;
  a->n_ = layout.numFloats;
  a->compactMaster_ = masterWeightsSharded(layout, precision);
  a->sizes_ = cudaStoreSizes(layout, a->compactMaster_);
  a->stream_ = stream;
  a->optimizer_ = cudaOptimizerTable(layout, a->compactMaster_);
  const std::vector<bp_cuda_segment> &update = a->optimizer_.segments;
  if (update.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return Status::error(ErrorCode::InvalidArgument,
                         "too many parameter tensors for one segment table");
  const size_t floats = static_cast<size_t>(a->n_) * sizeof(float);
  const size_t masterBytes =
      static_cast<size_t>(a->sizes_.master) * sizeof(float);
  const size_t momentBytes =
      static_cast<size_t>(a->sizes_.moments) * sizeof(float);
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->master_), masterBytes,
                     a->compactMaster_ ? "fp32 master weights (owned parts)"
                                       : "fp32 master weights"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->grads_), floats,
                     "fp32 gradient accumulators"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->m_), momentBytes,
                     "first moments"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->v_), momentBytes,
                     "second moments"));
  if (precision == Precision::Bf16)
    BP_TRY(a->allocate(reinterpret_cast<void **>(&a->compute_),
                       static_cast<size_t>(a->n_) * sizeof(bp_bf16_t),
                       "bf16 weights"));
  // The segment tables, once: the layout is fixed for the run.
  std::vector<bp_cuda_segment> norm = cudaSegments(layout.norm);
  a->numOptimizer_ = static_cast<int32_t>(update.size());
  a->numNorm_ = static_cast<int32_t>(norm.size());
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->optimizerSegments_),
                     update.size() * sizeof(bp_cuda_segment), "segment table"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->normSegments_),
                     norm.size() * sizeof(bp_cuda_segment), "segment table"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->normDevice_), sizeof(double),
                     "norm"));
  BP_TRY(a->allocate(reinterpret_cast<void **>(&a->invalidDevice_),
                     3 * update.size() * sizeof(int64_t), "state check"));
  // Host-waiting call: start-up.
  BP_TRY(cudaStatus(cudaMallocHost(reinterpret_cast<void **>(&a->normPinned_),
                                   sizeof(double)),
                    "allocating the norm's pinned slot"));
  // Everything on the store's stream, which does not synchronise with the
  // legacy default stream (cudaMemset / cudaMemcpy would race with it).
  if (!update.empty())
    BP_TRY(cudaStatus(cudaMemcpyAsync(a->optimizerSegments_, update.data(),
                                      update.size() * sizeof(bp_cuda_segment),
                                      cudaMemcpyHostToDevice, stream),
                      "uploading the segment table"));
  if (!norm.empty())
    BP_TRY(cudaStatus(cudaMemcpyAsync(a->normSegments_, norm.data(),
                                      norm.size() * sizeof(bp_cuda_segment),
                                      cudaMemcpyHostToDevice, stream),
                      "uploading the segment table"));
  const std::pair<float *, size_t> arrays[] = {{a->master_, masterBytes},
                                               {a->grads_, floats},
                                               {a->m_, momentBytes},
                                               {a->v_, momentBytes}};
  for (const auto &[p, bytes] : arrays)
    if (bytes)
      BP_TRY(cudaStatus(cudaMemsetAsync(p, 0, bytes, stream),
                        "zeroing the parameter store"));
  // The norm's table goes out of scope here; the update's stays (its host
  // copy names the state check's findings).
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
        static_cast<void *>(compute_), static_cast<void *>(optimizerSegments_),
        static_cast<void *>(normSegments_), static_cast<void *>(normDevice_),
        static_cast<void *>(invalidDevice_)})
    if (p)
      (void)cudaFree(p); // Host-waiting call: teardown.
  if (normPinned_)
    (void)cudaFreeHost(normPinned_); // Host-waiting call: teardown.
}

Status CudaParamArrays::drawWeights(float *whole, uint64_t seed) {
  for (const ParamSegment &seg : layout_.all) {
    if (seg.count == 0)
      continue;
    switch (seg.init) {
    case InitKind::Normal:
      BP_TRY(kernelStatus(bp_cuda_init_normal(whole + seg.offset, seg.count,
                                              seg.stddev, seed,
                                              hashName(seg.name), 0, stream_),
                          "drawing the initial weights of '" + seg.name + "'"));
      break;
    case InitKind::Zeros:
      break;
    case InitKind::Ones:
      BP_TRY(kernelStatus(
          bp_cuda_fill_f32(whole + seg.offset, 1.0f, seg.count, stream_),
          "initialising '" + seg.name + "'"));
      break;
    }
  }
  return Status::ok();
}

Status CudaParamArrays::keepWholeWeights(const float *whole) {
  if (compute_)
    BP_TRY(kernelStatus(bp_cuda_cast_f32_to_bf16(whole, compute_, n_, stream_),
                        "the bf16 copy of the weights"));
  if (!compactMaster_)
    return Status::ok();
  for (const OptimizerPart &p : layout_.owned)
    if (p.count > 0)
      BP_TRY(cudaStatus(
          cudaMemcpyAsync(master_ + p.moment, whole + p.offset,
                          static_cast<size_t>(p.count) * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream_),
          "keeping the owned parts of the master weights"));
  return Status::ok();
}

Status CudaParamArrays::initialize(uint64_t seed) {
  const size_t bytes = static_cast<size_t>(n_) * sizeof(float);
  if (bytes == 0)
    return Status::ok();
  // Zero everywhere first: the alignment gaps, the zero-initialised
  // tensors, the moments and the accumulators.
  const std::pair<float *, int64_t> arrays[] = {{master_, sizes_.master},
                                                {grads_, n_},
                                                {m_, sizes_.moments},
                                                {v_, sizes_.moments}};
  for (const auto &[p, count] : arrays)
    if (count > 0)
      BP_TRY(cudaStatus(
          cudaMemsetAsync(p, 0, static_cast<size_t>(count) * sizeof(float),
                          stream_),
          "zeroing the parameter store"));
  // Compact master weights are drawn whole in the accumulators (zero until
  // the first backward), each rank keeping its parts, so that every
  // element has the bits of an unsharded draw.
  float *whole = compactMaster_ ? grads_ : master_;
  BP_TRY(drawWeights(whole, seed));
  BP_TRY(keepWholeWeights(whole));
  if (compactMaster_)
    BP_TRY(cudaStatus(cudaMemsetAsync(grads_, 0, bytes, stream_),
                      "zeroing the gradient accumulators"));
  return cudaStatus(cudaStreamSynchronize(stream_),
                    "initialising the parameters");
}

Expected<std::vector<std::optional<InvalidState>>> CudaParamArrays::findInvalid() {
  std::vector<std::optional<InvalidState>> found(layout_.all.size());
  if (numOptimizer_ == 0)
    return found;
  BP_TRY(
      kernelStatus(bp_cuda_find_invalid(master_, m_, v_, optimizerSegments_,
                                        numOptimizer_, invalidDevice_, stream_),
                   "checking the parameters"));
  std::vector<int64_t> first(3 * static_cast<size_t>(numOptimizer_));
  BP_TRY(cudaStatus(cudaMemcpyAsync(first.data(), invalidDevice_,
                                    first.size() * sizeof(int64_t),
                                    cudaMemcpyDeviceToHost, stream_),
                    "reading the parameter check"));
  BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                    "reading the parameter check"));
  const std::vector<std::optional<StateFinding>> findings =
      stateFindings(optimizer_, found.size(), first);
  for (size_t p = 0; p < found.size(); ++p) {
    if (!findings[p])
      continue;
    const StateFinding &f = *findings[p];
    const float *at = findingValue<const float>(optimizer_, f, master_, m_, v_);
    // The one value, for the message (on the store's stream: a peer's
    // NCCL kernels may still run, so nothing device-wide).
    float value = 0.0f;
    BP_TRY(cudaStatus(cudaMemcpyAsync(&value, at, sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_),
                      "reading an invalid parameter value"));
    BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                      "reading an invalid parameter value"));
    found[p] = InvalidState{f.array, f.index, value};
  }
  return found;
}

Status CudaParamArrays::toHost() {
  allocateHostImage();
  // Compact master weights land in a staging vector first, then at their
  // parts of the whole image (ParamStore gathers the rest from the
  // replicas).
  std::vector<float> compact(compactMaster_ ? sizes_.master : 0);
  float *masterImage = compactMaster_ ? compact.data() : hostParams_.data();
  const size_t masterBytes = static_cast<size_t>(sizes_.master) * sizeof(float);
  const size_t momentBytes =
      static_cast<size_t>(sizes_.moments) * sizeof(float);
  if (masterBytes)
    BP_TRY(cudaStatus(cudaMemcpyAsync(masterImage, master_, masterBytes,
                                      cudaMemcpyDeviceToHost, stream_),
                      "downloading the master weights"));
  if (momentBytes) {
    BP_TRY(cudaStatus(cudaMemcpyAsync(hostM_.data(), m_, momentBytes,
                                      cudaMemcpyDeviceToHost, stream_),
                      "downloading the first moments"));
    BP_TRY(cudaStatus(cudaMemcpyAsync(hostV_.data(), v_, momentBytes,
                                      cudaMemcpyDeviceToHost, stream_),
                      "downloading the second moments"));
  }
  BP_TRY(cudaStatus(cudaStreamSynchronize(stream_),
                    "downloading the parameter store"));
  if (compactMaster_)
    expandOwnedParts(layout_, compact.data(), hostParams_.data());
  return Status::ok();
}

Status CudaParamArrays::toTarget() {
  if (hostParams_.size() != static_cast<size_t>(n_))
    return Status::error(ErrorCode::InvalidArgument,
                         "internal: the parameter store's host image is gone "
                         "(toTarget without toHost)");
  const size_t bytes = static_cast<size_t>(n_) * sizeof(float);
  const size_t momentBytes =
      static_cast<size_t>(sizes_.moments) * sizeof(float);
  if (bytes) {
    // The whole image goes where the stage functions' copy is made from:
    // the master weights, or (compact) the accumulators, zeroed after.
    float *whole = compactMaster_ ? grads_ : master_;
    BP_TRY(cudaStatus(cudaMemcpyAsync(whole, hostParams_.data(), bytes,
                                      cudaMemcpyHostToDevice, stream_),
                      "uploading the master weights"));
    BP_TRY(keepWholeWeights(whole));
    if (momentBytes) {
      BP_TRY(cudaStatus(cudaMemcpyAsync(m_, hostM_.data(), momentBytes,
                                        cudaMemcpyHostToDevice, stream_),
                        "uploading the first moments"));
      BP_TRY(cudaStatus(cudaMemcpyAsync(v_, hostV_.data(), momentBytes,
                                        cudaMemcpyHostToDevice, stream_),
                        "uploading the second moments"));
    }
    BP_TRY(cudaStatus(cudaMemsetAsync(grads_, 0, bytes, stream_),
                      "zeroing the gradient accumulators"));
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

CudaParamArrays::GatheredWeights CudaParamArrays::shardedWeights() {
  if (!layout_.shardedOptimizer)
    return {};
  // Under bf16 the replicas gather the bf16 copy, not fp32 weights: only
  // the owner of a part holds its fp32 master weights, and the copy it
  // wrote in the update is exactly their rounding (round to nearest even),
  // which every replica would compute alike from gathered fp32 weights.
  // Gathering the rounded bits gives every replica the same bits as that,
  // and as an unsharded step, for half the bytes and with no whole fp32
  // array. Under fp32 the master weights are what the stage functions read.
  if (compute_)
    return {compute_, DType::BF16};
  return {master_, DType::F32};
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
  if (numOptimizer_ == 0)
    return Status::ok();
  bp_cuda_adamw_constants constants = cudaConstants(c);
  return kernelStatus(bp_cuda_adamw_step(master_, grads_, m_, v_, compute_,
                                         optimizerSegments_, numOptimizer_,
                                         &constants, stream_),
                      "the AdamW step");
}

} // namespace bitpipe::runtime
