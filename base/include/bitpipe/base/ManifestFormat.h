//===- ManifestFormat.h - The manifest's structure, once --------*- C++ -*-===//
//
// The compiled program's manifest (bitpipe/program.h, "The manifest"): the
// JSON that the compiler writes next to the rank programs and the runtime
// reads at start-up. Its words are bitpipe/abi/ManifestKeys.def's; its
// structure (which object has which keys, of which type, which of them are
// required) is this file's, once: the structs below, one writer that spells
// them and one reader that fills them. The compiler
// (lib/Conversion/ProgramToRuntime) fills a Manifest and calls
// writeManifest; the runtime (runtime/lib/exec/Manifest.h) calls
// readManifest and then checks what the executor relies on across fields
// (a parameter a role names exists, groups and buckets agree, ...), which
// is meaning, not structure.
//
// Plain structs with one writer and one reader, rather than a schema that
// both sides' code is generated from: the manifest has nested lists of
// objects, a role's name under a key that is the role's own word, and an
// initialiser's "std" only for a normal one, which a schema of X-macros
// would need as much code to express as the reader itself; this way the
// whole structure is one file a newcomer reads top to bottom, the writer
// and the reader walk the same fields side by side, and
// base/unittests/ManifestFormatTest.cpp and the compiler's round trip
// (unittests/Conversion/ManifestRoundTripTest.cpp) hold the two to each
// other. Every enumeration is program.h's, built from ManifestKeys.def, so
// a new word there needs no edit here.
//
// The reader checks each value's JSON type, the presence of every required
// key, that every word is one of its vocabulary's, and the bounds a value
// has on its own (a size is at least 1); an error names the value's path in
// the manifest, the key and what was expected ("manifest:
// functions[3].args[1].role: unknown role 'kept' (expected one of ...)").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_MANIFESTFORMAT_H
#define BITPIPE_BASE_MANIFESTFORMAT_H

#include "bitpipe/base/Status.h"

#include "bitpipe/program.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitpipe::manifest {

/// The manifest's keys, as bitpipe/abi/ManifestKeys.def spells them
/// (key::Version is "version").
namespace key {
#define BP_MANIFEST_KEY(id, text) inline constexpr const char id[] = text;
#include "bitpipe/abi/ManifestKeys.def"
} // namespace key

/// "target": the runtime library the stage functions were built for, and
/// the element type they compute in.
struct Target {
  bp_target_kind name = BP_TARGET_CPU;
  bp_precision precision = BP_PRECISION_FP32;
};

/// "model". The optional keys are what a Hugging Face config.json needs
/// besides the parameters' shapes (docs/huggingface.md); the compiler
/// writes "mask_token", "heads", "max_positions" and "norm_position"
/// always, the others when the model has a norm, a rotary op, a GELU.
struct Model {
  std::string name;
  bp_model_family family = BP_MODEL_FAMILY_GPT;
  int64_t vocab = 0, seqLen = 0, microbatchSize = 0; // >= 1
  std::optional<int64_t> maskToken;                  // >= 0
  std::optional<int64_t> heads, maxPositions;        // >= 1
  std::optional<double> normEpsilon, ropeTheta;
  std::optional<bp_gelu_form> gelu;
  std::optional<bp_norm_position> normPosition;
  std::optional<double> embeddingDropout, attentionDropout, residualDropout;
};

/// "schedule".
struct Schedule {
  std::string name;
  /// Each >= 1.
  int64_t microbatches = 0, devices = 0, dataParallel = 1, worldSize = 0;
  bp_transfer_streams transferStreams = BP_TRANSFER_STREAMS_CHANNEL;
  /// [sender, receiver] pairs of pipeline ranks.
  std::vector<std::pair<int64_t, int64_t>> channels;
  bp_gradient_sync gradientSync = BP_GRADIENT_SYNC_FLAT;
};

/// One entry of "params".
struct Param {
  std::string name;
  std::vector<int64_t> shape; // each >= 1
  /// "init": its "kind", and its "std" (>= 0), present for a normal one
  /// only.
  bp_init_kind init = BP_INIT_NORMAL;
  double stddev = 0;
  bool decay = true;
};

/// Whether a role of \p kind has an "index": saved, forward_arg,
/// grad_of_result, grad_of_arg, stash. A "param" or an "input" role names
/// its parameter or input under the key that is its own word instead.
bool roleHasIndex(bp_role_kind kind);

/// program.h's ROLE: one argument or result of a stage function.
struct Role {
  bp_role_kind kind = BP_ROLE_ACTIVATION;
  /// A "param" role's parameter, under "param".
  std::string param;
  /// An "input" role's input, under "input".
  bp_input_kind input = static_cast<bp_input_kind>(0);
  /// A roleHasIndex role's "index" (>= 0); -1 for the others.
  int64_t index = -1;
  std::vector<int64_t> shape; // each >= 1
  bp_dtype dtype = BP_DTYPE_F32;
};

/// One entry of "functions".
struct Function {
  std::string name;
  bp_function_kind kind = BP_FUNCTION_FORWARD;
  int64_t stage = 0; // >= 0
  std::vector<Role> args, results;
};

/// One entry of a rank's "buckets".
struct Bucket {
  int64_t group = 0; // >= 0: an index into "groups"
  std::vector<std::string> params;
};

/// One entry of "ranks": a pipeline rank.
struct Rank {
  int64_t numValues = 0;                              // >= 0
  std::optional<int64_t> peakHandles, peakSavedBytes; // >= 0
  std::optional<double> predictedBubble;              // in [0, 1]
  std::vector<std::string> params;
  std::vector<Bucket> buckets;
};

/// The whole manifest; "version" is BP_MANIFEST_VERSION, written and
/// required.
struct Manifest {
  Target target;
  Model model;
  Schedule schedule;
  std::vector<Param> params;
  std::vector<Function> functions;
  /// Each a list of pipeline ranks (each >= 0).
  std::vector<std::vector<int64_t>> groups;
  std::vector<Rank> ranks;
};

/// The JSON text of \p manifest: compact (no whitespace), keys in
/// program.h's order, integers in decimal, other numbers with 17
/// significant digits ("%.17g").
std::string writeManifest(const Manifest &manifest);

/// Parses \p text (the structure above; see the file comment). A manifest
/// of another version than BP_MANIFEST_VERSION is an error naming both,
/// before anything else is read.
base::Expected<Manifest> readManifest(std::string_view text);

/// The error "manifest: <where>: <what>", as the reader's errors are;
/// for the checks a reader of the manifest adds.
base::Status error(const std::string &where, const std::string &what);
/// "<where>[<i>]".
std::string indexed(const std::string &where, size_t i);

/// The index of \p word in \p names (one of program.h's name tables), or
/// -1.
template <size_t N>
int findWord(const char *const (&names)[N], std::string_view word) {
  for (size_t i = 0; i < N; ++i)
    if (word == names[i])
      return static_cast<int>(i);
  return -1;
}

} // namespace bitpipe::manifest

#endif // BITPIPE_BASE_MANIFESTFORMAT_H
