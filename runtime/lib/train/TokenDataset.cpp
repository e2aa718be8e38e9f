//===- TokenDataset.cpp - Memory-mapped flat token file and sampler -*- C++ -*-===//

#include "TokenDataset.h"

#include "core/Random.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bitpipe::runtime {

/// Random stream of the sampler, so its numbers never coincide with those of
/// initialisation or masking drawn from the same seed.
static constexpr uint64_t kSamplerStream = 0x73616d706c657273ULL; // "samplers"

Expected<std::unique_ptr<TokenDataset>>
TokenDataset::open(const std::string &path, TokenDType dtype,
                   int64_t vocabSize) {
  if (vocabSize <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "token file '" + path + "': vocabulary size must be "
                                                 "positive");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(errno == ENOENT ? ErrorCode::NotFound
                                         : ErrorCode::IoError,
                         "cannot open token file '" + path +
                             "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::error(ErrorCode::IoError, "cannot stat token file '" +
                                                 path +
                                                 "': " + std::strerror(errno));
  }
  size_t width = dtype == TokenDType::U16 ? 2 : 4;
  size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes % width != 0) {
    ::close(fd);
    return Status::error(
        ErrorCode::FormatError,
        formatString("token file '%s' has %zu bytes, not a multiple of %zu: "
                     "is it really %s?",
                     path.c_str(), bytes, width,
                     dtype == TokenDType::U16 ? "uint16" : "uint32"));
  }
  std::unique_ptr<TokenDataset> d(new TokenDataset());
  d->path_ = path;
  d->dtype_ = dtype;
  d->vocabSize_ = vocabSize;
  d->numTokens_ = static_cast<int64_t>(bytes / width);
  if (bytes > 0) {
    void *p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return Status::error(ErrorCode::IoError, "cannot map token file '" +
                                                   path + "': " +
                                                   std::strerror(errno));
    }
    // Samples are scattered: tell the kernel not to read ahead.
    ::madvise(p, bytes, MADV_RANDOM);
    d->data_ = static_cast<const unsigned char *>(p);
    d->mappedBytes_ = bytes;
  }
  ::close(fd); // the mapping keeps the file alive
  return std::move(d);
}

TokenDataset::~TokenDataset() {
  if (data_)
    ::munmap(const_cast<unsigned char *>(data_), mappedBytes_);
}

uint32_t TokenDataset::at(int64_t i) const {
  // memcpy + explicit little-endian assembly: the file format is LE whatever
  // the host, and the mapping need not be aligned for the type.
  if (dtype_ == TokenDType::U16) {
    const unsigned char *p = data_ + 2 * i;
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
  }
  const unsigned char *p = data_ + 4 * i;
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

Status TokenDataset::read(int64_t offset, int64_t n, int32_t *out) const {
  if (offset < 0 || n < 0 || offset > numTokens_ - n)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("token file '%s': tokens [%lld, %lld) are outside the "
                     "file's %lld tokens",
                     path_.c_str(), static_cast<long long>(offset),
                     static_cast<long long>(offset + n),
                     static_cast<long long>(numTokens_)));
  for (int64_t i = 0; i < n; ++i) {
    uint32_t t = at(offset + i);
    if (t >= static_cast<uint64_t>(vocabSize_))
      return Status::error(
          ErrorCode::FormatError,
          formatString("token file '%s': token %u at position %lld is not "
                       "below the vocabulary size %lld",
                       path_.c_str(), t, static_cast<long long>(offset + i),
                       static_cast<long long>(vocabSize_)));
    out[i] = static_cast<int32_t>(t);
  }
  return Status::ok();
}

Status TokenDataset::validateAll() const {
  for (int64_t i = 0; i < numTokens_; ++i) {
    uint32_t t = at(i);
    if (t >= static_cast<uint64_t>(vocabSize_))
      return Status::error(
          ErrorCode::FormatError,
          formatString("token file '%s': token %u at position %lld is not "
                       "below the vocabulary size %lld",
                       path_.c_str(), t, static_cast<long long>(i),
                       static_cast<long long>(vocabSize_)));
  }
  return Status::ok();
}

uint64_t globalMicroBatchIndex(uint64_t step, int dpRank, int dpSize,
                               int microBatch, int numMicroBatches) {
  return (step * static_cast<uint64_t>(dpSize) +
          static_cast<uint64_t>(dpRank)) *
             static_cast<uint64_t>(numMicroBatches) +
         static_cast<uint64_t>(microBatch);
}

Expected<BatchSampler> BatchSampler::create(const TokenDataset &data,
                                            const SamplerConfig &config) {
  if (config.batchSize <= 0 || config.seqLen <= 0 || config.lookahead < 0)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("sampler: batch size %lld and sequence length %lld must "
                     "be positive",
                     static_cast<long long>(config.batchSize),
                     static_cast<long long>(config.seqLen)));
  int64_t need = config.seqLen + config.lookahead;
  if (data.numTokens() < need)
    return Status::error(
        ErrorCode::FormatError,
        formatString("token file '%s' is too short: it has %lld tokens, one "
                     "sample needs %lld (sequence length %lld + %lld)",
                     data.path().c_str(),
                     static_cast<long long>(data.numTokens()),
                     static_cast<long long>(need),
                     static_cast<long long>(config.seqLen),
                     static_cast<long long>(config.lookahead)));
  return BatchSampler(data, config);
}

int64_t BatchSampler::sampleOffset(uint64_t microBatch, int64_t row) const {
  int64_t span = config_.seqLen + config_.lookahead;
  if (config_.mode == SamplingMode::Random) {
    uint64_t starts = static_cast<uint64_t>(data_->numTokens() - span + 1);
    return static_cast<int64_t>(randomBelow(config_.seed,
                                            kSamplerStream ^ mix64(microBatch),
                                            static_cast<uint64_t>(row),
                                            starts));
  }
  // Windows step by T, not T + lookahead: the target of a window's last
  // token is the next window's first token, as nanoGPT's sequential loaders.
  uint64_t windows = static_cast<uint64_t>(
      (data_->numTokens() - config_.lookahead) / config_.seqLen);
  uint64_t sample =
      microBatch * static_cast<uint64_t>(config_.batchSize) +
      static_cast<uint64_t>(row);
  return static_cast<int64_t>(sample % windows) * config_.seqLen;
}

Status BatchSampler::gptBatch(uint64_t microBatch, int32_t *tokens,
                              int32_t *targets) const {
  if (config_.lookahead < 1)
    return Status::error(ErrorCode::InvalidArgument,
                         "sampler: GPT batches need lookahead >= 1 (targets "
                         "are the next tokens)");
  int64_t T = config_.seqLen;
  for (int64_t b = 0; b < config_.batchSize; ++b) {
    int64_t o = sampleOffset(microBatch, b);
    if (tokens) {
      Status s = data_->read(o, T, tokens + b * T);
      if (!s.isOk())
        return s;
    }
    if (targets) {
      Status s = data_->read(o + 1, T, targets + b * T);
      if (!s.isOk())
        return s;
    }
  }
  return Status::ok();
}

Status BatchSampler::rows(uint64_t microBatch, int32_t *tokens) const {
  int64_t T = config_.seqLen;
  for (int64_t b = 0; b < config_.batchSize; ++b) {
    Status s = data_->read(sampleOffset(microBatch, b), T, tokens + b * T);
    if (!s.isOk())
      return s;
  }
  return Status::ok();
}

} // namespace bitpipe::runtime
