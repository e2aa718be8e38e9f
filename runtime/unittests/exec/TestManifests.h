//===- TestManifests.h - Manifests for the executor unit tests --*- C++ -*-===//
//
// The fake model's manifest (FakeModel.h) with the 2 x 2 configuration of
// FakePrograms.cpp (two data-parallel copies of a two-rank pipeline: two
// rank programs, four world ranks), as a string the tests parse or break
// on purpose.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_EXEC_TESTMANIFESTS_H
#define BITPIPE_RUNTIME_UNITTESTS_EXEC_TESTMANIFESTS_H

#include "FakeModel.h"

#include <string>

namespace bitpipe::runtime::testing {

inline std::string modelJson(const char *family = "gpt") {
  return std::string("\"model\": {\"name\": \"fake\", \"family\": \"") +
         family +
         "\", \"vocab\": 32, \"seq_len\": 8, \"microbatch_size\": 2},";
}

/// \p gradientSync: the schedule's "gradient_sync" word.
inline std::string pipeDpTailJson(const char *gradientSync = "flat") {
  const char *first = "\"params\": [\"embed.tokens\", \"embed.pos\", "
                      "\"hidden.weight\", \"hidden.bias\"], \"buckets\": ["
                      "{\"group\": 1, \"params\": [\"hidden.weight\", "
                      "\"hidden.bias\", \"embed.pos\"]},"
                      "{\"group\": 0, \"params\": [\"embed.tokens\"]}]}";
  const char *last = "\"params\": [\"embed.tokens\"], \"buckets\": "
                     "[{\"group\": 0, \"params\": [\"embed.tokens\"]}]}";
  // Pipeline ranks: group 0 (the tied embedding) is world ranks 0-3, group
  // 1 (pipeline rank 0 alone) world ranks 0 and 2; the channels 0 -> 1
  // (activations) and 1 -> 0 (their gradients) in each copy.
  return std::string("\"schedule\": {\"name\": \"gpipe\", \"microbatches\": 2, "
                     "\"devices\": 2, \"data_parallel\": 2, \"world_size\": 4, "
                     "\"transfer_streams\": \"channel\", "
                     "\"channels\": [[0, 1], [1, 0]], "
                     "\"gradient_sync\": \"") +
         gradientSync + "\"}, \"groups\": [[0, 1], [0]], \"ranks\": [" +
         "{\"num_values\": 10, " + first + "," + "{\"num_values\": 11, " +
         last + "]";
}

inline std::string pipeDpManifest(const char *gradientSync = "flat") {
  return "{\"version\": " + std::to_string(BP_MANIFEST_VERSION) + "," +
         FAKE_TARGET_JSON + modelJson() + FAKE_PARAMS_JSON +
         FAKE_FUNCTIONS_JSON + pipeDpTailJson(gradientSync) + "}";
}

/// \p text with the first occurrence of \p from replaced by \p to.
inline std::string replaced(std::string text, const std::string &from,
                            const std::string &to) {
  size_t at = text.find(from);
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

/// pipeDpManifest in three copies: group 0 (pipeline ranks 0 and 1) makes
/// six optimizer shards, group 1 (pipeline rank 0) three, and neither
/// divides a bucket (512 elements each).
inline std::string threeCopiesManifest(const char *gradientSync = "flat") {
  return replaced(pipeDpManifest(gradientSync),
                  "\"data_parallel\": 2, \"world_size\": 4",
                  "\"data_parallel\": 3, \"world_size\": 6");
}

/// pipeDpManifest with stage 0's forward also taking the micro-batch's
/// dropout key, of shape \p keyShape, after its tokens (argument 5).
inline std::string dropoutKeyManifest(const std::string &keyShape = "[4]") {
  const std::string tokens =
      FAKE_R("input", ", \"input\": \"tokens\"", "[2, 8]", "i32");
  return replaced(pipeDpManifest(), tokens,
                  tokens +
                      ", {\"role\": \"input\", \"input\": \"dropout_key\", "
                      "\"shape\": " +
                      keyShape + ", \"dtype\": \"i32\"}");
}

} // namespace bitpipe::runtime::testing

#endif // BITPIPE_RUNTIME_UNITTESTS_EXEC_TESTMANIFESTS_H
