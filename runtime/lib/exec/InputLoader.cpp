//===- InputLoader.cpp - Micro-batches for bp_rt_load_input -----*- C++ -*-===//

#include "InputLoader.h"

#include "core/Dropout.h"

namespace bitpipe::runtime {

Expected<std::unique_ptr<InputLoader>>
InputLoader::open(const Manifest &manifest, const std::string &path,
                  TokenDType dtype, uint64_t seed, SamplingMode mode) {
  const ModelSpec &model = manifest.model;
  std::unique_ptr<InputLoader> loader(new InputLoader(manifest));
  Expected<std::unique_ptr<TokenDataset>> data =
      TokenDataset::open(path, dtype, model.vocab);
  if (!data.isOk())
    return data.status();
  loader->data_ = data.take();
  SamplerConfig config;
  config.batchSize = model.microbatchSize;
  config.seqLen = model.seqLen;
  config.seed = seed;
  config.mode = mode;
  // GPT's and LLaMA's targets are the next tokens; BERT's labels come from
  // the masking.
  config.lookahead = isNextTokenModel(model.family) ? 1 : 0;
  Expected<BatchSampler> sampler =
      BatchSampler::create(*loader->data_, config);
  if (!sampler.isOk())
    return sampler.status();
  loader->sampler_ = std::make_unique<BatchSampler>(sampler.take());
  Status s = loader->data_->validateAll();
  if (!s.isOk())
    return s;
  loader->mask_.vocabSize = model.vocab;
  loader->mask_.maskTokenId = model.maskToken;
  loader->mask_.seed = seed;
  return loader;
}

Status InputLoader::load(int64_t step, int dpCopy, int64_t mb, InputKind kind,
                         int32_t *out, int64_t count) const {
  const ModelSpec &model = manifest_.model;
  const ScheduleSpec &schedule = manifest_.schedule;
  int64_t n = model.microbatchSize * model.seqLen;
  if (kind == InputKind::DropoutKey && count != kDropoutKeyWords)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("load_input of a dropout key of %lld words; a key is "
                     "%d int32",
                     static_cast<long long>(count), kDropoutKeyWords));
  if (kind != InputKind::DropoutKey && count != n)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("load_input of %lld ids; a micro-batch has "
                     "microbatch_size x seq_len = %lld",
                     static_cast<long long>(count), static_cast<long long>(n)));
  if (mb < 0 || mb >= schedule.microbatches)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("load_input of micro-batch %lld; the schedule has %lld",
                     static_cast<long long>(mb),
                     static_cast<long long>(schedule.microbatches)));
  uint64_t global = globalMicroBatchIndex(
      static_cast<uint64_t>(step), dpCopy,
      static_cast<int>(schedule.dataParallel), static_cast<int>(mb),
      static_cast<int>(schedule.microbatches));
  // The seed the sampler draws with, and the index it samples this
  // micro-batch's rows by: the sample group g of the dropout mask.
  if (kind == InputKind::DropoutKey) {
    fillDropoutKey(sampler_->config().seed, global, out);
    return Status::ok();
  }
  if (isNextTokenModel(model.family))
    return kind == InputKind::Tokens ? sampler_->gptBatch(global, out, nullptr)
                                     : sampler_->gptBatch(global, nullptr, out);
  std::vector<int32_t> rows(static_cast<size_t>(n)), other(rows.size());
  Status s = sampler_->rows(global, rows.data());
  if (!s.isOk())
    return s;
  // buildMaskedLMBatch writes both; keep the one asked for.
  return kind == InputKind::Tokens
             ? buildMaskedLMBatch(rows.data(), n, global, mask_, out,
                                  other.data())
             : buildMaskedLMBatch(rows.data(), n, global, mask_, other.data(),
                                  out);
}

} // namespace bitpipe::runtime
