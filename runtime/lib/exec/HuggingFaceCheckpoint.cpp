//===- HuggingFaceCheckpoint.cpp - --load and --save-hf of HF files -*- C++ -*-===//

#include "HuggingFaceCheckpoint.h"

#include "ModelCheckpoint.h"
#include "core/Tensor.h"
#include "train/Checkpoint.h"

#include <set>

namespace bitpipe::runtime {

namespace {

Status manifestError(const std::string &what) {
  return Status::error(ErrorCode::InvalidArgument,
                       "Hugging Face checkpoint: " + what);
}

/// The shape of parameter \p name, or null.
const std::vector<int64_t> *shapeOf(const Manifest &m,
                                    const std::string &name) {
  int p = m.findParam(name);
  return p < 0 ? nullptr : &m.params[static_cast<size_t>(p)].shape;
}

/// The shape of parameter \p name with \p rank dimensions, or an error
/// naming it.
Expected<std::vector<int64_t>> requireShape(const Manifest &m,
                                            const std::string &name,
                                            size_t rank) {
  const std::vector<int64_t> *shape = shapeOf(m, name);
  if (!shape || shape->size() != rank)
    return manifestError("the model has no parameter '" + name + "' of " +
                         std::to_string(rank) +
                         " dimensions, which its family's models have");
  return *shape;
}

} // namespace

Expected<HfModelSizes> manifestHfSizes(const Manifest &manifest) {
  const ModelSpec &model = manifest.model;
  HfModelSizes s;
  switch (model.family) {
  case ModelFamily::Gpt:
    s.type = HfModelType::Gpt2;
    break;
  case ModelFamily::Bert:
    s.type = HfModelType::Bert;
    break;
  case ModelFamily::Llama:
    s.type = HfModelType::Llama;
    break;
  }
  if (model.heads <= 0)
    return manifestError("the manifest's model has no \"heads\" (an "
                         "executable compiled before Hugging Face support: "
                         "compile it again)");
  BP_ASSIGN(tokens, requireShape(manifest, "embed.tokens", 2));
  s.vocab = tokens[0];
  s.hidden = tokens[1];
  s.heads = model.heads;
  while (shapeOf(manifest, "layers." + std::to_string(s.layers) +
                               ".ln1.weight"))
    ++s.layers;
  s.maxPositions = model.maxPositions;
  if (model.normEpsilon > 0)
    s.normEpsilon = model.normEpsilon;
  if (model.ropeTheta > 0)
    s.ropeTheta = model.ropeTheta;
  s.embeddingDropout = model.embeddingDropout;
  s.attentionDropout = model.attentionDropout;
  s.residualDropout = model.residualDropout;
  // BERT's hidden_dropout_prob is both its embeddings' and its sublayers'
  // (docs/models.md, "Dropout").
  if (s.type == HfModelType::Bert && s.embeddingDropout != s.residualDropout)
    return manifestError(formatString(
        "the model drops its embeddings with p = %g and its sublayers' "
        "outputs with p = %g; a Hugging Face bert config has one "
        "hidden_dropout_prob for both",
        s.embeddingDropout, s.residualDropout));

  if (s.type != HfModelType::Llama) {
    if (!model.gelu)
      return manifestError(
          "the manifest's model names no \"gelu\" form (its nn.gelu ops mix "
          "the tanh and erf forms, or it has none); a Hugging Face " +
          std::string(hfModelTypeName(s.type)) +
          " config names one activation");
    s.geluName = *model.gelu == GeluForm::Erf ? "gelu" : "gelu_new";
    BP_ASSIGN(positions, requireShape(manifest, "embed.positions", 2));
    s.maxPositions = positions[0];
    // The compiler says where the norms sit (#nn.model's norm_position).
    if (s.type == HfModelType::Bert && model.normPosition == NormPosition::Post)
      s.normPosition = HfNormPosition::Post;
    return s;
  }
  BP_ASSIGN(qkv, requireShape(manifest, "layers.0.attn.qkv.weight", 2));
  BP_ASSIGN(gate, requireShape(manifest, "layers.0.mlp.gate.weight", 2));
  // qkv has (heads + 2 kv_heads) d rows (docs/llama.md).
  if (s.hidden % s.heads == 0) {
    int64_t d = s.hidden / s.heads;
    s.kvHeads = (qkv[0] / d - s.heads) / 2;
  }
  s.intermediate = gate[0];
  s.tiedHead = !shapeOf(manifest, "head.weight");
  return s;
}

Expected<HfMapping> manifestHfMapping(const Manifest &manifest) {
  BP_ASSIGN(sizes, manifestHfSizes(manifest));
  BP_ASSIGN(mapping, huggingFaceMapping(sizes));
  // The mapping must cover the model's parameters exactly, shapes too:
  // hand-written IR may name its parameters otherwise.
  std::set<std::string> mapped;
  for (const HfParamMapping &m : mapping.params) {
    const std::vector<int64_t> *shape = shapeOf(manifest, m.param);
    if (!shape || *shape != m.shape)
      return manifestError(
          "a " + std::string(hfModelTypeName(sizes.type)) +
          " model of these sizes has parameter '" + m.param + "' " +
          shapeToString(m.shape) + ", but the model has " +
          (shape ? "it as " + shapeToString(*shape) : std::string("none")));
    mapped.insert(m.param);
  }
  for (const ParamSpec &p : manifest.params)
    if (!mapped.count(p.name))
      return manifestError("the model's parameter '" + p.name +
                           "' has no Hugging Face counterpart "
                           "(docs/huggingface.md lists the names)");
  return mapping;
}

Status loadHuggingFaceWeights(const Manifest &manifest, ParamStore &store,
                              const std::string &path) {
  BP_ASSIGN(mapping, manifestHfMapping(manifest));
  BP_ASSIGN(file, HfCheckpoint::open(path));
  BP_TRY(file->check(mapping));
  for (const CheckpointParam &p : store.checkpointParams()) {
    const HfParamMapping *m = mapping.find(p.name);
    if (!m) // manifestHfMapping covers every parameter
      return manifestError("no mapping for parameter '" + p.name + "'");
    BP_TRY(file->read(mapping, *m, p.param));
    // Finite, as a bitpipe checkpoint must be (Checkpoint.h); the moments
    // are the store's zeros.
    Status values = checkCheckpointValues(p);
    if (!values.isOk())
      return Status::error(values.code(), "'" + path + "': " +
                                              values.message());
  }
  return Status::ok();
}

Status saveHuggingFace(Communicator &comm, const Manifest &manifest,
                       ParamStore &store, const std::string &dir) {
  GatheredModel model;
  BP_TRY(gatherModelState(comm, manifest, store, /*moments=*/false, &model));
  if (comm.rank() != 0)
    return Status::ok();
  BP_ASSIGN(sizes, manifestHfSizes(manifest));
  BP_ASSIGN(mapping, huggingFaceMapping(sizes));
  return writeHuggingFace(
      dir, mapping,
      [&](const std::string &param) -> const float * {
        int p = manifest.findParam(param);
        return p < 0 ? nullptr : model.weights[static_cast<size_t>(p)].data();
      },
      huggingFaceConfigJson(sizes));
}

} // namespace bitpipe::runtime
