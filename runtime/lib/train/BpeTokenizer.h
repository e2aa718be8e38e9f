//===- BpeTokenizer.h - Hugging Face byte-level BPE -------------*- C++ -*-===//
//
// Text to token ids with a tokenizer.json of Hugging Face's `tokenizers`
// library, so that a model trains on real subwords (docs/data.md): GPT-2's
// tokenizer, or one trained on the corpus with `tokenizers`
// (scripts/train-tokenizer.py). The kind read is byte-level BPE (model
// "BPE" after a "ByteLevel" pre-tokenizer, no normaliser), which covers
// every byte of any input; any other kind is refused by name rather than
// encoded differently.
//
// Encoding follows `tokenizers`: the text is split by GPT-2's pattern
// ('s 't 're 've 'm 'll 'd, then letters, digits and other characters,
// each run with at most one leading space, then whitespace), each piece's
// bytes are mapped to GPT-2's printable characters, and the merges are
// applied lowest rank first. The pattern's classes are Unicode's letters
// (\p{L}), numbers (\p{N}) and white space: exact for ASCII, Latin-1 and
// the common white space; a character of another script counts as a letter
// unless it is in the punctuation and symbol blocks listed in the .cpp, so
// digits and symbols of other scripts may split otherwise than in
// `tokenizers` (every id is still one of the vocabulary's).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_BPETOKENIZER_H
#define BITPIPE_RUNTIME_TRAIN_BPETOKENIZER_H

#include "core/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bitpipe::runtime {

class BpeTokenizer {
public:
  /// Reads \p path; refuses, naming the field, what is not byte-level BPE.
  static Expected<BpeTokenizer> load(const std::string &path);

  /// One more than the largest id of the vocabulary and the added tokens:
  /// the model's vocabulary must be at least this.
  int64_t vocabSize() const { return vocabSize_; }

  /// Appends the ids of \p text (UTF-8; an invalid byte is encoded as the
  /// byte it is). Special tokens are not inserted: documents concatenate
  /// as text.
  Status encode(std::string_view text, std::vector<int64_t> &ids);

private:
  /// The ids of one pre-tokenised piece, given as GPT-2's characters.
  Status encodePiece(const std::string &piece, std::vector<int64_t> &ids);

  std::unordered_map<std::string, int64_t> vocab_;
  /// "left\x01right" -> the merge's rank (its line in the file).
  std::unordered_map<std::string, int> mergeRank_;
  /// The ids of pieces seen before: text repeats its words.
  std::unordered_map<std::string, std::vector<int64_t>> cache_;
  bool addPrefixSpace_ = false;
  bool ignoreMerges_ = false;
  int64_t vocabSize_ = 0;
  std::string path_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_BPETOKENIZER_H
