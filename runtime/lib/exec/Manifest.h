//===- Manifest.h - The compiled program's manifest, parsed -----*- C++ -*-===//
//
// The JSON manifest that bitpipe-lower-to-runtime emits next to the stage
// functions and rank programs (its grammar is in bitpipe/program.h), read by
// the manifest's one reader (bitpipe/base/ManifestFormat.h, which also
// checks its structure: keys, types, words), then resolved into the
// executor's structs below, with every name resolved to an index. Parsing
// also checks what the executor relies on later, so that a malformed
// manifest is one message at start-up ("manifest: functions[3].args[1]:
// ...") and not a crash in the middle of a step:
//   - every ROLE fits the kind of its function (a forward has no stash...),
//     names a known parameter with the parameter's shape, and has a size;
//   - there is one rank entry per pipeline rank; groups hold distinct
//     pipeline ranks in increasing order, and stand for world groups of at
//     least two ranks; channels are distinct pairs of two pipeline ranks,
//     sorted;
//   - a bucket's group contains its pipeline rank, its parameters are held
//     by the rank and in no other bucket, and every member of a group lists
//     the same buckets (parameters, order) for it: the all-reduce then sums
//     the same gradients elementwise on every member, in place.
//
// Ranks (program.h, "The manifest"; docs/runtime-abi.md): the executable
// holds one program per PIPELINE rank p in [0, devices), run by every
// DATA-PARALLEL copy c in [0, data_parallel); the process of WORLD rank
// w = c * devices + p runs program p as copy c. The manifest describes
// pipeline ranks only; Manifest's rank helpers below are the one place
// that maps them to world ranks.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_MANIFEST_H
#define BITPIPE_RUNTIME_EXEC_MANIFEST_H

#include "comm/TransferStreams.h"
#include "core/DType.h"
#include "core/Status.h"

#include "bitpipe/base/GradientSyncGroups.h"
#include "bitpipe/program.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitpipe::runtime {

/// program.h's model families (values: its bp_model_family).
enum class ModelFamily {
  Gpt = BP_MODEL_FAMILY_GPT,
  Bert = BP_MODEL_FAMILY_BERT,
  Llama = BP_MODEL_FAMILY_LLAMA,
};

/// Whether a family is trained on next-token targets (GPT, LLaMA) rather
/// than BERT's masked-LM labels (docs/training-semantics.md).
inline bool isNextTokenModel(ModelFamily family) {
  return family != ModelFamily::Bert;
}

/// program.h's targets (values: its bp_target_kind): which runtime library
/// the stage functions were compiled for.
/// Which GELU the model computes (nn.gelu's form).
enum class GeluForm {
  Tanh = BP_GELU_FORM_TANH,
  Erf = BP_GELU_FORM_ERF,
};

/// Where the layer norms sit (#nn.model's norm_position).
enum class NormPosition {
  Pre = BP_NORM_POSITION_PRE,
  Post = BP_NORM_POSITION_POST,
};

enum class TargetKind {
  Cpu = BP_TARGET_CPU,
  Cuda = BP_TARGET_CUDA,
};

/// program.h's precisions (values: its bp_precision).
enum class Precision {
  Fp32 = BP_PRECISION_FP32,
  Bf16 = BP_PRECISION_BF16,
};

const char *targetKindName(TargetKind kind);
const char *precisionName(Precision precision);

/// The manifest's "target". Under bf16 (cuda only) the weights the stage
/// functions read, activations and their gradients are bf16; parameter
/// gradients, the loss and statistics stay f32 (program.h).
struct TargetSpec {
  TargetKind kind = TargetKind::Cpu;
  Precision precision = Precision::Fp32;
  /// The element type of what the stage functions compute in: the weights
  /// they read and the activations.
  DType computeDType() const {
    return precision == Precision::Bf16 ? DType::BF16 : DType::F32;
  }
  /// The element type of the rank's parameter-gradient accumulators, which
  /// the stage functions add into in place (program.h's "param" role):
  /// float64 on the CPU (docs/training-semantics.md), fp32 on CUDA. The
  /// backend's ParamArrays hold the same (checked when the executor starts).
  DType gradientDType() const {
    return kind == TargetKind::Cpu ? DType::F64 : DType::F32;
  }
};

struct ModelSpec {
  std::string name;
  ModelFamily family = ModelFamily::Gpt;
  int64_t vocab = 0;
  int64_t seqLen = 0;
  int64_t microbatchSize = 0;
  int32_t maskToken = -1; // BERT only; -1 when absent
  // What a Hugging Face config.json needs besides the parameters' shapes
  // (docs/huggingface.md): 0 when absent (a manifest of hand-written IR).
  int64_t heads = 0, maxPositions = 0;
  double normEpsilon = 0; // the norms' epsilon; 0: no norm
  double ropeTheta = 0;   // the rotary base; 0: no rotary op
  std::optional<GeluForm> gelu; // none: no GELU, or GELUs of both forms
  NormPosition normPosition = NormPosition::Pre;
  // The dropout probabilities (docs/models.md, "Dropout"); 0: none.
  double embeddingDropout = 0, attentionDropout = 0, residualDropout = 0;
};

struct ScheduleSpec {
  std::string name;
  /// Micro-batches per step of ONE data-parallel copy (micro-batch numbers
  /// of a rank program are in [0, microbatches)); a step trains on
  /// microbatches * dataParallel micro-batches in all.
  int64_t microbatches = 0;
  int64_t devices = 0;
  int64_t dataParallel = 1;
  int64_t worldSize = 0;
  /// How the CUDA target queues the transfers (comm/TransferStreams.h).
  TransferStreams transferStreams = TransferStreams::Channel;
  /// Every directed channel {sender, receiver} of PIPELINE ranks that a
  /// transfer crosses, in every copy alike: distinct, sorted, sender !=
  /// receiver.
  std::vector<Channel> channels;
  /// How a group sums across the copies (docs/data-parallel.md, "Two
  /// levels"): Manifest::syncsInTwoLevels says which groups take two.
  bp_gradient_sync gradientSync = BP_GRADIENT_SYNC_FLAT;
};

/// program.h's initialisers (values: its bp_init_kind).
enum class InitKind {
  Normal = BP_INIT_NORMAL,
  Zeros = BP_INIT_ZEROS,
  Ones = BP_INIT_ONES,
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  InitKind init = InitKind::Normal;
  double stddev = 0.02;
  bool decay = true;
};

/// program.h's roles; the values are its bp_role_kind, which indexes the
/// names the compiler writes.
enum class RoleKind {
  Param = BP_ROLE_PARAM,
  Input = BP_ROLE_INPUT,
  Activation = BP_ROLE_ACTIVATION,
  Output = BP_ROLE_OUTPUT,
  Saved = BP_ROLE_SAVED,
  ForwardArg = BP_ROLE_FORWARD_ARG,
  GradOfResult = BP_ROLE_GRAD_OF_RESULT,
  GradOfArg = BP_ROLE_GRAD_OF_ARG,
  Stash = BP_ROLE_STASH,
};

const char *roleKindName(RoleKind kind);

/// An input role's input, and bp_rt_load_input's `kind` (values: program.h's
/// bp_input_kind).
enum class InputKind : int32_t {
  Tokens = BP_INPUT_TOKENS,
  Labels = BP_INPUT_LABELS,
  DropoutKey = BP_INPUT_DROPOUT_KEY,
};

struct Role {
  RoleKind kind = RoleKind::Activation;
  int param = -1;  // Param: index into Manifest::params
  InputKind input = InputKind::Tokens; // Input
  int index = -1;  // Saved, ForwardArg, GradOfResult, GradOfArg, Stash
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  int64_t numel = 0;
  size_t bytes() const { return static_cast<size_t>(numel) * dtypeSize(dtype); }
  /// A forward output of this shape is the micro-batch loss.
  bool isScalarF32() const { return shape.empty() && dtype == DType::F32; }
};

/// program.h's function kinds (values: its bp_function_kind).
enum class FunctionKind {
  Forward = BP_FUNCTION_FORWARD,
  Backward = BP_FUNCTION_BACKWARD,
  BackwardInput = BP_FUNCTION_BACKWARD_INPUT,
  BackwardWeight = BP_FUNCTION_BACKWARD_WEIGHT,
};

const char *functionKindName(FunctionKind kind);

struct StageFunction {
  std::string name;
  FunctionKind kind = FunctionKind::Forward;
  int stage = 0;
  std::vector<Role> args;
  std::vector<Role> results;
};

struct BucketSpec {
  int group = 0;           // index into Manifest::groups
  std::vector<int> params; // indices into Manifest::params, in bucket order
};

/// What the manifest says about one pipeline rank: the same for every
/// data-parallel copy of it.
struct RankSpec {
  int32_t numValues = 0;
  /// The schedule's prediction (program.h): most forward handles alive at
  /// once, and most bytes of their saved results; -1 when not given.
  int64_t peakHandles = -1, peakSavedBytes = -1;
  /// The schedule's own idle share of this rank's step, as the compiler
  /// simulated it; -1 when the manifest has none.
  double predictedBubble = -1;
  std::vector<int> params; // indices into Manifest::params
  std::vector<BucketSpec> buckets;
  bool holds(int param) const;
};

struct Manifest {
  TargetSpec target;
  ModelSpec model;
  ScheduleSpec schedule;
  std::vector<ParamSpec> params;
  std::vector<StageFunction> functions;
  /// Every all-reduce group, as pipeline ranks in increasing order; the
  /// communicator's group is worldGroup(g).
  std::vector<std::vector<int>> groups;
  /// Index p <-> bitpipe_rank_programs[p]: one per pipeline rank.
  std::vector<RankSpec> ranks;

  /// Index of parameter \p name, or -1.
  int findParam(std::string_view name) const;
  /// The lowest world rank holding parameter \p param (whose copy is saved
  /// and counted once in the gradient norm): its pipeline rank in copy 0.
  /// -1 if no rank holds it.
  int ownerRank(int param) const;

  // The ranks (file comment). \p world is a world rank in
  // [0, schedule.worldSize), \p pipeline a pipeline rank in
  // [0, schedule.devices), \p copy a copy in [0, schedule.dataParallel).
  int pipelineRanks() const { return static_cast<int>(schedule.devices); }
  /// The pipeline rank of world rank \p world: which program it runs.
  int pipelineRank(int world) const { return world % pipelineRanks(); }
  /// The data-parallel copy of world rank \p world: whose data it reads
  /// and whose pipeline ranks it talks to.
  int copyOf(int world) const { return world / pipelineRanks(); }
  /// The world rank of pipeline rank \p pipeline in copy \p copy.
  int worldRank(int copy, int pipeline) const {
    return copy * pipelineRanks() + pipeline;
  }
  /// What the manifest says about world rank \p world.
  const RankSpec &rankSpec(int world) const {
    return ranks[static_cast<size_t>(pipelineRank(world))];
  }
  /// The world ranks of group \p g: its pipeline ranks in every copy, in
  /// increasing order ({c * devices + p : c < data_parallel, p in g}).
  std::vector<int> worldGroup(int g) const;
  /// Whether group \p g sums in two levels: schedule.gradientSync says
  /// "hierarchical" and the group has two levels to use
  /// (bitpipe/base/GradientSyncGroups.h's rule).
  bool syncsInTwoLevels(int g) const;
  /// Group \p g's two levels as world ranks (GradientSyncGroups.h's
  /// layout): its members in each copy, and each member's copies; each
  /// level is what Communicator::createPartition takes.
  base::TwoLevelGroups twoLevelGroups(int g) const;
  /// The schedule's channels as world ranks, in every copy: {(c * devices
  /// + s, c * devices + r) : c < data_parallel, [s, r] in channels}, copy
  /// by copy (so still sorted). What Communicator::openChannels takes.
  std::vector<Channel> worldChannels() const;
};

/// Reads \p text (manifest::readManifest: every word as
/// bitpipe/abi/ManifestKeys.def spells it, and only a manifest of version
/// BP_MANIFEST_VERSION, any other being an error naming both versions), then
/// checks and resolves it (see the file comment).
Expected<Manifest> parseManifest(std::string_view text);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_MANIFEST_H
