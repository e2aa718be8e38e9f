//===- ReferenceGpt.h - A hand-written GPT trainer on the kernels -*- C++ -*-===//
//
// The "plain reference implementation" of the step-time benchmark: the GPT of
// docs/models.md trained in one process the way one would write it by hand on top
// of runtime.h - every buffer allocated once, the kernels called in a fixed
// sequence, gradient accumulation over the micro-batches, the runtime's
// AdamW. No compiler, no schedule, no executor, no communication: what is
// left of a compiled executable's step time beyond this is their overhead.
//
// It initialises the parameters (by name and seed) and samples the data
// exactly as the executables do, so its losses double as a cross-check.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BENCH_TRAINSTEP_REFERENCEGPT_H
#define BITPIPE_BENCH_TRAINSTEP_REFERENCEGPT_H

#include "train/AdamW.h"
#include "train/TokenDataset.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bitpipe::bench {

struct GptShape {
  int64_t layers = 0, hidden = 0, heads = 0, vocab = 0, maxPositions = 0;
  int64_t seqLen = 0, microbatchSize = 0;
};

class ReferenceGpt {
public:
  ReferenceGpt(const GptShape &shape, uint64_t seed,
               const runtime::AdamWConfig &adam);
  ~ReferenceGpt();

  /// One training step over `microbatches` micro-batches of `sampler`
  /// (global micro-batch indices step * microbatches + m); returns the mean
  /// loss.
  runtime::Expected<double> step(const runtime::BatchSampler &sampler,
                                 int64_t stepIndex, int microbatches);

  int64_t numParameters() const;

private:
  struct Layer;
  struct Tensor {
    std::string name;
    std::vector<float> value, m, v;
    std::vector<float> grad;       // one micro-batch's (the kernels add)
    std::vector<double> gradSum;   // the step's, in float64 as the runtime
    bool decay = true;
  };
  Tensor &param(const std::string &name, int64_t count, bool decay);
  void forwardBackward(const int32_t *tokens, const int32_t *targets,
                       float *loss);

  GptShape s_;
  runtime::AdamW adam_;
  std::vector<std::unique_ptr<Tensor>> params_;
  std::vector<std::unique_ptr<Layer>> layers_;
  Tensor *wte_, *wpe_, *lnfG_, *lnfB_;
  // Activations of one micro-batch (N = B * T rows).
  std::vector<float> x0_, xf_, yf_, meanf_, rstdf_, logits_, rowMax_, logSum_,
      dx_, dtmp_, dy_;
  std::vector<int32_t> tokens_, targets_;
};

} // namespace bitpipe::bench

#endif // BITPIPE_BENCH_TRAINSTEP_REFERENCEGPT_H
