//===- MaskedLM.cpp - BERT masked-LM batches --------------------*- C++ -*-===//

#include "MaskedLM.h"

#include "bitpipe/runtime.h"
#include "core/Random.h"

#include <algorithm>

namespace bitpipe::runtime {

static constexpr uint64_t kMaskStream = 0x6d61736b6c6d3135ULL; // "masklm15"

Status buildMaskedLMBatch(const int32_t *tokens, int64_t n,
                          uint64_t microBatch, const MaskedLMConfig &config,
                          int32_t *inputs, int32_t *labels) {
  if (!tokens || !inputs || !labels || n <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "masked LM: null buffer or empty batch");
  if (config.vocabSize <= 0 || config.maskTokenId < 0 ||
      config.maskTokenId >= config.vocabSize || config.maskProb < 0 ||
      config.maskProb > 1)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("masked LM: mask token %d must be in [0, %lld) and the "
                     "mask probability %g in [0, 1]",
                     config.maskTokenId,
                     static_cast<long long>(config.vocabSize),
                     config.maskProb));
  uint64_t stream = kMaskStream ^ mix64(microBatch);
  for (int64_t i = 0; i < n; ++i) {
    int32_t t = tokens[i];
    if (t < 0 || t >= config.vocabSize)
      return Status::error(
          ErrorCode::InvalidArgument,
          formatString("masked LM: token %d at position %lld is not below the "
                       "vocabulary size %lld",
                       t, static_cast<long long>(i),
                       static_cast<long long>(config.vocabSize)));
    uint64_t c = 3 * static_cast<uint64_t>(i);
    bool special = std::find(config.specialTokens.begin(),
                             config.specialTokens.end(),
                             t) != config.specialTokens.end();
    if (special || randomUniform(config.seed, stream, c) >= config.maskProb) {
      labels[i] = BP_IGNORE_INDEX;
      inputs[i] = t;
      continue;
    }
    labels[i] = t;
    double kind = randomUniform(config.seed, stream, c + 1);
    if (kind < 0.8)
      inputs[i] = config.maskTokenId;
    else if (kind < 0.9)
      inputs[i] = static_cast<int32_t>(
          randomBelow(config.seed, stream, c + 2,
                      static_cast<uint64_t>(config.vocabSize)));
    else
      inputs[i] = t;
  }
  return Status::ok();
}

} // namespace bitpipe::runtime
