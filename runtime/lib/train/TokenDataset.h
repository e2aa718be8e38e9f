//===- TokenDataset.h - Memory-mapped flat token file and sampler -*- C++ -*-===//
//
// The training data is one flat binary file of token ids, as nanoGPT's
// prepare.py and Megatron's preprocessing write it: no header, little-endian
// uint16 (vocabularies up to 65536, GPT-2's 50257) or uint32; the caller says
// which. The file is memory-mapped, so a rank touches only the pages of the
// samples it reads.
//
// Which samples a micro-batch gets is a pure function of its *global
// micro-batch index* (see globalMicroBatchIndex()), the seed and the row:
// every rank can compute the samples of exactly the micro-batches it runs
// (only the first stage needs tokens, only the last needs targets), and
// different micro-batches -- BitPipe's two directions, data-parallel
// replicas, successive steps -- have different indices, so they draw
// different samples by construction.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_TOKENDATASET_H
#define BITPIPE_RUNTIME_TRAIN_TOKENDATASET_H

#include "core/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace bitpipe::runtime {

enum class TokenDType { U16, U32 };

class TokenDataset {
public:
  /// Maps \p path. Every token is checked against \p vocabSize when read
  /// (not at open: a file of billions of tokens would take a while).
  static Expected<std::unique_ptr<TokenDataset>>
  open(const std::string &path, TokenDType dtype, int64_t vocabSize);
  ~TokenDataset();
  TokenDataset(const TokenDataset &) = delete;
  TokenDataset &operator=(const TokenDataset &) = delete;

  int64_t numTokens() const { return numTokens_; }
  int64_t vocabSize() const { return vocabSize_; }
  const std::string &path() const { return path_; }

  /// Copies tokens [offset, offset + n) into \p out, failing on a position
  /// outside the file or an id >= vocabSize (the message names the file, the
  /// position and the id).
  Status read(int64_t offset, int64_t n, int32_t *out) const;

  /// Checks every token of the file against the vocabulary (a data-prep
  /// check; O(file)).
  Status validateAll() const;

private:
  TokenDataset() = default;
  uint32_t at(int64_t i) const;

  std::string path_;
  TokenDType dtype_ = TokenDType::U16;
  int64_t vocabSize_ = 0;
  int64_t numTokens_ = 0;
  const unsigned char *data_ = nullptr;
  size_t mappedBytes_ = 0;
};

/// How sample start offsets are chosen.
enum class SamplingMode {
  /// nanoGPT's get_batch: every row starts at a uniformly random offset,
  /// drawn from (seed, micro-batch index, row). Samples may overlap.
  Random,
  /// Consecutive non-overlapping windows: sample s = mb * B + row starts at
  /// (s mod W) * T, W = the number of whole windows in the file; the data is
  /// walked in order and wraps around (a new epoch) after W samples.
  Sequential,
};

struct SamplerConfig {
  int64_t batchSize = 1; // B: rows per micro-batch
  int64_t seqLen = 1;    // T: tokens per row
  uint64_t seed = 0;
  SamplingMode mode = SamplingMode::Random;
  /// Tokens read past the row: 1 for GPT (the targets are the next tokens),
  /// 0 for BERT (labels come from the masking).
  int64_t lookahead = 1;
};

/// global micro-batch index = (step * dpSize + dpRank) * numMicroBatches +
/// microBatch, where microBatch in [0, numMicroBatches) numbers the
/// micro-batches of one pipeline replica's step across both directions
/// (BitPipe: down takes some, up the others; they never share an index).
uint64_t globalMicroBatchIndex(uint64_t step, int dpRank, int dpSize,
                               int microBatch, int numMicroBatches);

class BatchSampler {
public:
  /// Fails if the file has fewer than seqLen + lookahead tokens (saying how
  /// many it has and needs), or a size is not positive.
  static Expected<BatchSampler> create(const TokenDataset &data,
                                       const SamplerConfig &config);

  const SamplerConfig &config() const { return config_; }

  /// Start offset in the file of row \p row of micro-batch \p microBatch.
  int64_t sampleOffset(uint64_t microBatch, int64_t row) const;

  /// GPT: tokens[b, t] = file[o_b + t], targets[b, t] = file[o_b + t + 1];
  /// both [B, T] int32 (the kernels' token type). Needs lookahead >= 1.
  /// Either pointer may be null (a middle stage needs neither, the last stage
  /// only targets).
  Status gptBatch(uint64_t microBatch, int32_t *tokens,
                  int32_t *targets) const;

  /// The raw rows tokens[b, t] = file[o_b + t], [B, T]; BERT masks these.
  Status rows(uint64_t microBatch, int32_t *tokens) const;

private:
  BatchSampler(const TokenDataset &data, SamplerConfig config)
      : data_(&data), config_(config) {}

  const TokenDataset *data_;
  SamplerConfig config_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_TOKENDATASET_H
