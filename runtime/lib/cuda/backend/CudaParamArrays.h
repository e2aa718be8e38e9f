//===- CudaParamArrays.h - The parameter store in device memory -*- C++ -*-===//
//
// The CUDA target's ParamArrays (exec/Backend.h): fp32 master weights, fp32
// gradient accumulators and fp32 AdamW moments in device memory and, under
// bf16, the bf16 copy of the weights that the stage functions read (under
// fp32 they read the master weights). The stage functions' gradient
// kernels add into the accumulators in place (beta = 1 into the
// accumulator's slice), the norm is bp_cuda_sum_squares and the update
// bp_cuda_adamw_step, over segment tables built once from the layout. The
// initial weights are drawn on the device (bp_cuda_init_normal) and the
// end-of-run check runs there (bp_cuda_find_invalid). The host image
// (loading and saving checkpoints) is a staging copy that exists only
// between toHost() and toTarget(): checkpoints keep their format (fp32
// master weights and moments), so they move freely between targets.
//
// Under a sharded optimizer (docs/data-parallel.md, "Sharded optimizer")
// the moments hold the rank's owned parts only, compactly (ParamLayout::
// owned), and so do the fp32 master weights under bf16, where the stage
// functions read the bf16 copy (masterWeightsSharded in SegmentTable.h).
// The AdamW kernel updates the owned parts (cudaOptimizerTable) and, under
// bf16, writes their bf16 copy; the ranks then all-gather the weights the
// stage functions read (shardedWeights: the fp32 master weights under
// fp32, the bf16 copy under bf16). Whole fp32 weights exist on the device
// only for a moment, in the gradient accumulators, where initialize() draws
// them and toTarget() uploads them before each keeps its part.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_BACKEND_CUDAPARAMARRAYS_H
#define BITPIPE_RUNTIME_CUDA_BACKEND_CUDAPARAMARRAYS_H

#include "Backend.h"
#include "SegmentTable.h"

#include "bitpipe/cuda.h"

#include <cuda_runtime.h>

#include <memory>
#include <vector>

namespace bitpipe::runtime {

class CudaParamArrays final : public ParamArrays {
public:
  /// Allocates the arrays of \p layout (zeroed) and its segment tables;
  /// the work goes on \p stream. There is no host image until toHost().
  static Expected<std::unique_ptr<ParamArrays>>
  create(const ParamLayout &layout, Precision precision, cudaStream_t stream);
  ~CudaParamArrays() override;

  Status initialize(uint64_t seed) override;
  Expected<std::vector<std::optional<InvalidState>>> findInvalid() override;

  float *hostParams() override { return hostParams_.data(); }
  float *hostM() override { return hostM_.data(); }
  float *hostV() override { return hostV_.data(); }
  Status toHost() override;
  Status toTarget() override;
  void releaseHost() override;

  int64_t targetBytes() const override { return deviceBytes_; }
  void *computeParams(int64_t offset) override;
  void *gradData() override { return grads_; }
  DType gradDType() const override { return DType::F32; }
  GatheredWeights shardedWeights() override;
  bool shardsMasterWeights() const override { return compactMaster_; }
  Status zeroGradients() override;
  Expected<double> sumSquaredGradients(int numMicroBatches) override;
  Status adamwStep(AdamW &optimizer, int numMicroBatches,
                   double globalSumSquares) override;

private:
  CudaParamArrays() = default;
  /// cudaMalloc of \p bytes into *out (nothing for 0 bytes), naming
  /// \p what and the free memory when the device has no room.
  Status allocate(void **out, size_t bytes, const char *what);
  void allocateHostImage();
  /// Each segment's initial weights into \p whole (the layout's offsets;
  /// zero beforehand), as its `init` says.
  Status drawWeights(float *whole, uint64_t seed);
  /// From whole fp32 weights on the device (the layout's offsets): the
  /// bf16 copy of all of them and, when the master weights are compact,
  /// the owned parts into them.
  Status keepWholeWeights(const float *whole);

  ParamLayout layout_;
  int64_t n_ = 0;
  StoreSizes sizes_;
  bool compactMaster_ = false;
  int64_t deviceBytes_ = 0; // what allocate() obtained
  cudaStream_t stream_ = nullptr;
  float *master_ = nullptr, *grads_ = nullptr, *m_ = nullptr, *v_ = nullptr;
  bp_bf16_t *compute_ = nullptr; // bf16 only
  /// The update's and the state check's table (its host copy names the
  /// parameters of the check's findings), and the norm's.
  OptimizerTable optimizer_;
  bp_cuda_segment *optimizerSegments_ = nullptr, *normSegments_ = nullptr;
  int32_t numOptimizer_ = 0, numNorm_ = 0;
  double *normDevice_ = nullptr;
  int64_t *invalidDevice_ = nullptr; // bp_cuda_find_invalid's answer
  double *normPinned_ = nullptr;     // the norm's landing slot on the host
  std::vector<float> hostParams_, hostM_, hostV_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CUDA_BACKEND_CUDAPARAMARRAYS_H
