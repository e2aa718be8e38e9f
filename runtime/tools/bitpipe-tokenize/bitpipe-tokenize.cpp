//===- bitpipe-tokenize.cpp - Text files to a flat token file -------------===//
//
//   bitpipe-tokenize [--tokenizer tokenizer.json] [--vocab V]
//                    [--dtype u16|u32] -o TOKENS.bin FILE...
//
// Text files to the flat little-endian token file that nanoGPT's and
// Megatron's tools write and TokenDataset reads, the files concatenated in
// the order given (docs/data.md). Without --tokenizer, every byte becomes
// one token (ids 0..255, so a model with vocab >= 256 can train on it); with
// one, a Hugging Face byte-level BPE tokenizer.json gives subwords
// (train/BpeTokenizer.h), and --vocab V, the model's vocabulary, is checked
// to hold every id the tokenizer can give. The output
// is written as every tool writes (bitpipe/base/AtomicFile.h,
// docs/files.md): to a temporary renamed over TOKENS.bin once complete, so a
// failed run (a full disk, a signal) leaves the previous file as it was; a
// directory or a symbolic link is refused before the inputs are read.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/base/AtomicFile.h"
#include "core/Flags.h"
#include "train/BpeTokenizer.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace bitpipe::runtime;

namespace {

int usage(const FlagSet &flags) {
  std::fprintf(stderr,
               "usage: bitpipe-tokenize [--tokenizer tokenizer.json] "
               "[--vocab V] [--dtype u16|u32] -o TOKENS.bin FILE...\n"
               "Writes the files as tokens: one per byte, or the subwords "
               "of a Hugging Face byte-level BPE tokenizer.\n"
               "\nflags:\n%s",
               flags.help().c_str());
  return 2;
}

bool readFile(const std::string &path, std::vector<unsigned char> &out) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "bitpipe-tokenize: %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  unsigned char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    out.insert(out.end(), buffer, buffer + n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok)
    std::fprintf(stderr, "bitpipe-tokenize: %s: read error\n", path.c_str());
  return ok;
}

/// \p ids as \p width-byte little-endian integers, on every host (byte by
/// byte, not a memcpy).
std::vector<unsigned char> encode(const std::vector<int64_t> &ids,
                                  size_t width) {
  std::vector<unsigned char> out(ids.size() * width, 0);
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t k = 0; k < width; ++k)
      out[i * width + k] = static_cast<unsigned char>(ids[i] >> (8 * k));
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::string output, dtype = "u16", tokenizerPath;
  int64_t modelVocab = 0;
  bool help = false;
  std::vector<std::string> inputs;
  FlagSet flags;
  flags.text("-o", "TOKENS.bin", "the token file to write (required)", &output)
      .text("--tokenizer", "tokenizer.json",
            "a Hugging Face byte-level BPE tokenizer (default: one token "
            "per byte)",
            &tokenizerPath)
      .integer("--vocab", "V",
               "the model's vocabulary: refuse a tokenizer with more ids",
               &modelVocab, 1)
      .text("--dtype", "u16|u32", "token type (default u16)", &dtype)
      .toggle("--help", "this text", &help)
      .toggle("-h", "the same", &help);
  Status parsed = flags.parse(argc, argv, &inputs);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "bitpipe-tokenize: %s\n", parsed.message().c_str());
    return usage(flags);
  }
  if (help || output.empty() || inputs.empty())
    return usage(flags);
  if (dtype != "u16" && dtype != "u32") {
    std::fprintf(stderr,
                 "bitpipe-tokenize: --dtype must be u16 or u32, got '%s'\n",
                 dtype.c_str());
    return 2;
  }
  Expected<bitpipe::base::OutputKind> destination =
      bitpipe::base::checkOutputDestination(output);
  if (!destination.isOk()) {
    std::fprintf(stderr, "bitpipe-tokenize: -o: %s\n",
                 destination.status().message().c_str());
    return 1;
  }

  // The ids the files can hold: the byte's 256, or the tokenizer's.
  std::optional<BpeTokenizer> tokenizer;
  int64_t vocabSize = 256;
  if (!tokenizerPath.empty()) {
    Expected<BpeTokenizer> loaded = BpeTokenizer::load(tokenizerPath);
    if (!loaded.isOk()) {
      std::fprintf(stderr, "bitpipe-tokenize: --tokenizer: %s\n",
                   loaded.status().message().c_str());
      return 1;
    }
    tokenizer = loaded.take();
    vocabSize = tokenizer->vocabSize();
  }
  const char *source = tokenizer ? "the tokenizer" : "byte tokens";
  if (modelVocab > 0 && vocabSize > modelVocab) {
    std::fprintf(stderr,
                 "bitpipe-tokenize: --vocab %lld: %s give%s ids up to %lld, "
                 "beyond the model's vocabulary (its embedding has %lld "
                 "rows); train a model with vocab >= %lld, or a tokenizer "
                 "with fewer tokens\n",
                 static_cast<long long>(modelVocab), source,
                 tokenizer ? "s" : "", static_cast<long long>(vocabSize - 1),
                 static_cast<long long>(modelVocab),
                 static_cast<long long>(vocabSize));
    return 1;
  }
  if (dtype == "u16" && vocabSize > 65536) {
    std::fprintf(stderr,
                 "bitpipe-tokenize: %s gives ids up to %lld, which u16 "
                 "cannot hold: write --dtype u32 (and train with "
                 "--data-dtype u32)\n",
                 source, static_cast<long long>(vocabSize - 1));
    return 1;
  }

  std::vector<int64_t> ids;
  size_t inputBytes = 0;
  for (const std::string &path : inputs) {
    std::vector<unsigned char> bytes;
    if (!readFile(path, bytes))
      return 1;
    inputBytes += bytes.size();
    if (!tokenizer) {
      ids.insert(ids.end(), bytes.begin(), bytes.end());
      continue;
    }
    Status s = tokenizer->encode(
        std::string_view(reinterpret_cast<const char *>(bytes.data()),
                         bytes.size()),
        ids);
    if (!s.isOk()) {
      std::fprintf(stderr, "bitpipe-tokenize: %s: %s\n", path.c_str(),
                   s.message().c_str());
      return 1;
    }
  }
  if (ids.empty()) {
    std::fprintf(stderr, "bitpipe-tokenize: the input files are empty\n");
    return 1;
  }
  std::vector<unsigned char> data = encode(ids, dtype == "u16" ? 2 : 4);
  Status status =
      bitpipe::base::writeFileAtomically(output, data.data(), data.size());
  if (!status.isOk()) {
    std::fprintf(stderr, "bitpipe-tokenize: -o: %s\n",
                 status.message().c_str());
    return 1;
  }
  std::printf("bitpipe-tokenize: %zu tokens (%s, ids < %lld, %.2f bytes "
              "a token) from %zu file(s) -> %s\n",
              ids.size(), dtype.c_str(), static_cast<long long>(vocabSize),
              static_cast<double>(inputBytes) / ids.size(), inputs.size(),
              output.c_str());
  return 0;
}
