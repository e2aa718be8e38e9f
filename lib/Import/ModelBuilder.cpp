//===- ModelBuilder.cpp - Model IR for GPT- and BERT-style models ---------===//
//
// GPT (GPT-2 / Megatron-LM): token + learned position embedding; L pre-LN
// layers; final layer norm; output projection tied to the token embedding;
// next-token cross-entropy.
// BERT: the same layers with bidirectional attention and final layer norm;
// masked-LM head (dense h -> h, GELU, layer norm, output projection tied to
// the token embedding, with its own bias); cross-entropy on the masked
// positions only (the others carry the ignore index). Post-LN BERT (the
// original, Hugging Face's BertForMaskedLM): a layer norm after the
// embeddings, each layer x = ln1(x + attn(x)), x = ln2(x + mlp(x)), no
// final layer norm, the same head.
// LLaMA (docs/llama.md): token embedding only; L pre-norm layers of RMSNorm,
// a bias-free fused q/k/v projection ([q | k | v], k and v with kv_heads
// heads), rotary embedding of q and k, causal (grouped-query) attention,
// output projection, RMSNorm, SwiGLU MLP (gate, up, down projections);
// final RMSNorm; an output projection of its own (or tied to the token
// embedding); next-token cross-entropy.
// Dropout (docs/models.md, "Dropout"), where the config has it, as GPT-2 and
// BERT place it: after the embeddings (after their norm in post-LN BERT),
// on the attention probabilities, and on each sublayer's output before its
// residual add; LLaMA only on the attention probabilities. Each dropout is
// a numbered site, and every one draws from the micro-batch's key, one more
// function input.
// Initialisation (GPT-2): weights normal(0, 0.02), biases zero, norm gains
// one, the two residual output projections of each layer normal(0, 0.02 /
// sqrt(2L)).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Import/ModelBuilder.h"

#include "bitpipe/Dialect/NN/IR/DropoutSites.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/abi/Dropout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::nn;

namespace {

/// How a parameter is initialised: #nn.init's fields.
struct Init {
  InitKind kind;
  std::optional<double> std;
};
constexpr double kInitStd = 0.02;

/// Collects the function's parameters and inputs, then builds its body.
class ModelBuilder {
public:
  ModelBuilder(MLIRContext &ctx, const ModelConfig &config,
               PartitionUnits units)
      : ctx(ctx), config(config), units(units), b(&ctx), f32(b.getF32Type()) {}

  OwningOpRef<ModuleOp> build();

private:
  /// Declares a parameter; returns its index among the function arguments.
  unsigned param(StringRef name, ArrayRef<int64_t> shape, Init init);
  Value arg(unsigned index) { return body->getArgument(index); }
  /// Sets the partition unit (nn.layer) of every op created from now on.
  void setLayer(int64_t layer) { currentLayer = layer; }
  /// The unit of transformer layer \p index's first ops (all of its ops
  /// under PartitionUnits::Layers).
  void enterLayer(int64_t index) {
    setLayer(units == PartitionUnits::Halves ? 2 * index + 1 : index + 1);
  }
  /// Where layer \p index's MLP half begins: a unit of its own under
  /// PartitionUnits::Halves.
  void enterMlpHalf(int64_t index) {
    if (units == PartitionUnits::Halves)
      setLayer(2 * index + 2);
  }
  template <typename OpT, typename... Args> Value create(Args &&...args);

  Value layerNorm(Value x, StringRef prefix);
  Value rmsNorm(Value x, StringRef prefix);
  Value linear(Value x, StringRef prefix);
  Value linearNoBias(Value x, StringRef prefix);
  /// nn.gelu of the config's form.
  Value gelu(Value x);
  Value transformerLayer(Value x, int64_t index);
  Value postNormLayer(Value x, int64_t index);
  bool postNorm() const {
    return config.family == ModelFamily::BERT &&
           config.normPosition == bitpipe::NormPosition::Post;
  }
  Value llamaLayer(Value x, int64_t index);
  /// nn.attention's and nn.rotary's kv_heads: none without grouping.
  IntegerAttr kvHeadsAttr();
  /// nn.attention of layer \p index, dropping its probabilities as the
  /// config says.
  Value attention(Value qkv, int64_t index, bool causal);
  /// Dropout site \p site with probability \p p: an nn.dropout, or \p x
  /// itself when p is 0.
  Value dropout(Value x, double p, int64_t site);

  void declareGptBertParams();
  void declareLlamaParams();

  MLIRContext &ctx;
  const ModelConfig &config;
  PartitionUnits units;
  OpBuilder b;
  Type f32;

  // Declared before the body is built.
  SmallVector<Type> argTypes;
  SmallVector<NamedAttrList> argAttrs;
  // Parameter name -> argument index, in declaration order.
  llvm::StringMap<unsigned> paramIndex;
  Block *body = nullptr;
  int64_t currentLayer = 0;
  /// The micro-batch's random key, when the model has dropout.
  std::optional<unsigned> dropoutKey;
};

unsigned ModelBuilder::param(StringRef name, ArrayRef<int64_t> shape,
                             Init init) {
  unsigned index = argTypes.size();
  argTypes.push_back(RankedTensorType::get(shape, f32));
  NamedAttrList attrs;
  attrs.append(nn::attr::kParam, b.getStringAttr(name));
  attrs.append(nn::attr::kInit, InitAttr::get(&ctx, init.kind, init.std));
  argAttrs.push_back(attrs);
  paramIndex[name] = index;
  return index;
}

template <typename OpT, typename... Args>
Value ModelBuilder::create(Args &&...args) {
  auto op = b.create<OpT>(b.getUnknownLoc(), std::forward<Args>(args)...);
  op->setAttr(nn::attr::kLayer, b.getI64IntegerAttr(currentLayer));
  return op->getResult(0);
}

Value ModelBuilder::gelu(Value x) {
  nn::GeluForm form = config.gelu == bitpipe::GeluForm::Erf
                          ? nn::GeluForm::Erf
                          : nn::GeluForm::Tanh;
  return create<GeluOp>(x, form);
}

Value ModelBuilder::layerNorm(Value x, StringRef prefix) {
  Value gamma = arg(paramIndex[(prefix + ".weight").str()]);
  Value beta = arg(paramIndex[(prefix + ".bias").str()]);
  return create<LayerNormOp>(x, gamma, beta,
                             b.getF32FloatAttr(config.layerNormEpsilon),
                             /*with_stats=*/UnitAttr());
}

Value ModelBuilder::rmsNorm(Value x, StringRef prefix) {
  Value gamma = arg(paramIndex[(prefix + ".weight").str()]);
  return create<RMSNormOp>(x, gamma, b.getF32FloatAttr(config.layerNormEpsilon),
                           /*with_stats=*/UnitAttr());
}

Value ModelBuilder::linearNoBias(Value x, StringRef prefix) {
  Value w = arg(paramIndex[(prefix + ".weight").str()]);
  return create<LinearOp>(x, w, Value());
}

IntegerAttr ModelBuilder::kvHeadsAttr() {
  return config.kvHeads == config.heads
             ? IntegerAttr()
             : b.getI64IntegerAttr(config.kvHeads);
}

Value ModelBuilder::dropout(Value x, double p, int64_t site) {
  if (p == 0)
    return x;
  return create<DropoutOp>(x, arg(*dropoutKey),
                           DropoutAttr::get(&ctx, static_cast<float>(p), site));
}

Value ModelBuilder::attention(Value qkv, int64_t index, bool causal) {
  IntegerAttr heads = b.getI64IntegerAttr(config.heads);
  // Only LLaMA's configs have key/value heads.
  IntegerAttr kvHeads =
      config.family == ModelFamily::LLaMA ? kvHeadsAttr() : IntegerAttr();
  UnitAttr causalAttr = causal ? b.getUnitAttr() : UnitAttr();
  if (config.attentionDropout == 0)
    return create<AttentionOp>(qkv, heads, kvHeads, causalAttr, Value(),
                               DropoutAttr(), /*with_stats=*/UnitAttr());
  return create<AttentionOp>(
      qkv, heads, kvHeads, causalAttr, arg(*dropoutKey),
      DropoutAttr::get(&ctx, static_cast<float>(config.attentionDropout),
                       attentionDropoutSite(index)),
      /*with_stats=*/UnitAttr());
}

Value ModelBuilder::llamaLayer(Value x, int64_t index) {
  std::string p = "layers." + std::to_string(index);
  Value h = rmsNorm(x, p + ".ln1");
  Value qkv = linearNoBias(h, p + ".attn.qkv");
  IntegerAttr heads = b.getI64IntegerAttr(config.heads);
  qkv = create<RotaryOp>(qkv, heads, kvHeadsAttr(),
                         b.getF32FloatAttr(config.ropeTheta));
  Value a = attention(qkv, index, /*causal=*/true);
  x = create<AddOp>(x, linearNoBias(a, p + ".attn.proj"));
  enterMlpHalf(index);
  h = rmsNorm(x, p + ".ln2");
  // Two statements: the order of the ops (and of a reader's argument list)
  // must not depend on the evaluation order of call arguments.
  Value gate = linearNoBias(h, p + ".mlp.gate");
  Value up = linearNoBias(h, p + ".mlp.up");
  Value m = create<SwiGLUOp>(gate, up);
  return create<AddOp>(x, linearNoBias(m, p + ".mlp.down"));
}

Value ModelBuilder::linear(Value x, StringRef prefix) {
  Value w = arg(paramIndex[(prefix + ".weight").str()]);
  Value bias = arg(paramIndex[(prefix + ".bias").str()]);
  return create<LinearOp>(x, w, bias);
}

Value ModelBuilder::transformerLayer(Value x, int64_t index) {
  std::string p = "layers." + std::to_string(index);
  double residual = config.residualDropout;
  Value h = layerNorm(x, p + ".ln1");
  Value qkv = linear(h, p + ".attn.qkv");
  Value a = attention(qkv, index, config.family == ModelFamily::GPT);
  Value out = dropout(linear(a, p + ".attn.proj"), residual,
                      attentionOutputDropoutSite(index));
  x = create<AddOp>(x, out);
  enterMlpHalf(index);
  h = layerNorm(x, p + ".ln2");
  Value m = gelu(linear(h, p + ".mlp.fc"));
  out = dropout(linear(m, p + ".mlp.proj"), residual,
                mlpOutputDropoutSite(index));
  return create<AddOp>(x, out);
}

Value ModelBuilder::postNormLayer(Value x, int64_t index) {
  std::string p = "layers." + std::to_string(index);
  double residual = config.residualDropout;
  Value qkv = linear(x, p + ".attn.qkv");
  Value a = attention(qkv, index, /*causal=*/false);
  Value out = dropout(linear(a, p + ".attn.proj"), residual,
                      attentionOutputDropoutSite(index));
  x = layerNorm(create<AddOp>(x, out), p + ".ln1");
  enterMlpHalf(index);
  Value m = gelu(linear(x, p + ".mlp.fc"));
  out = dropout(linear(m, p + ".mlp.proj"), residual,
                mlpOutputDropoutSite(index));
  return layerNorm(create<AddOp>(x, out), p + ".ln2");
}

void ModelBuilder::declareGptBertParams() {
  int64_t h = config.hidden, L = config.layers;
  Init weight{InitKind::Normal, kInitStd};
  Init residual{InitKind::Normal, kInitStd / std::sqrt(2.0 * L)};
  Init zeros{InitKind::Zeros}, ones{InitKind::Ones};
  auto normParams = [&](const std::string &prefix) {
    param(prefix + ".weight", {h}, ones);
    param(prefix + ".bias", {h}, zeros);
  };
  auto linearParams = [&](const std::string &prefix, int64_t out, int64_t in,
                          Init init) {
    param(prefix + ".weight", {out, in}, init);
    param(prefix + ".bias", {out}, zeros);
  };

  // Parameters, in the order the model uses them: a post-LN layer uses
  // each norm after its sublayer, and the embeddings' norm takes the place
  // of the final one.
  bool post = postNorm();
  param("embed.tokens", {config.vocab, h}, weight);
  param("embed.positions", {config.maxPositions, h}, weight);
  if (post)
    normParams("embed.ln");
  for (int64_t i = 0; i < L; ++i) {
    std::string p = "layers." + std::to_string(i);
    if (!post)
      normParams(p + ".ln1");
    linearParams(p + ".attn.qkv", 3 * h, h, weight);
    linearParams(p + ".attn.proj", h, h, residual);
    normParams(p + (post ? ".ln1" : ".ln2"));
    linearParams(p + ".mlp.fc", 4 * h, h, weight);
    linearParams(p + ".mlp.proj", h, 4 * h, residual);
    if (post)
      normParams(p + ".ln2");
  }
  if (!post)
    normParams("final_ln");
  if (config.family == ModelFamily::BERT) {
    linearParams("head.dense", h, h, weight);
    normParams("head.ln");
    param("head.bias", {config.vocab}, zeros);
  }
}

void ModelBuilder::declareLlamaParams() {
  int64_t h = config.hidden, L = config.layers, I = config.intermediateSize;
  int64_t headDim = h / config.heads;
  // The fused projection's rows: q (heads), then k and v (kv_heads each).
  int64_t qkvRows = (config.heads + 2 * config.kvHeads) * headDim;
  Init weight{InitKind::Normal, kInitStd};
  Init residual{InitKind::Normal, kInitStd / std::sqrt(2.0 * L)};
  Init ones{InitKind::Ones};

  param("embed.tokens", {config.vocab, h}, weight);
  for (int64_t i = 0; i < L; ++i) {
    std::string p = "layers." + std::to_string(i);
    param(p + ".ln1.weight", {h}, ones);
    param(p + ".attn.qkv.weight", {qkvRows, h}, weight);
    param(p + ".attn.proj.weight", {h, h}, residual);
    param(p + ".ln2.weight", {h}, ones);
    param(p + ".mlp.gate.weight", {I, h}, weight);
    param(p + ".mlp.up.weight", {I, h}, weight);
    param(p + ".mlp.down.weight", {h, I}, residual);
  }
  param("final_ln.weight", {h}, ones);
  if (!config.tieEmbeddings)
    param("head.weight", {config.vocab, h}, weight);
}

OwningOpRef<ModuleOp> ModelBuilder::build() {
  int64_t h = config.hidden, L = config.layers;
  bool bert = config.family == ModelFamily::BERT;
  bool llama = config.family == ModelFamily::LLaMA;
  if (llama)
    declareLlamaParams();
  else
    declareGptBertParams();
  unsigned wte = paramIndex["embed.tokens"];

  // Inputs: one micro-batch of token ids and labels.
  auto ids = RankedTensorType::get({config.microbatchSize, config.seqLen},
                                   b.getI32Type());
  for (StringRef input : {nn::attr::kTokens, nn::attr::kLabels}) {
    argTypes.push_back(ids);
    NamedAttrList attrs;
    attrs.append(nn::attr::kInput, b.getStringAttr(input));
    argAttrs.push_back(attrs);
  }
  unsigned tokens = argTypes.size() - 2, labels = argTypes.size() - 1;
  if (config.hasDropout()) {
    dropoutKey = argTypes.size();
    argTypes.push_back(
        RankedTensorType::get({BP_DROPOUT_KEY_WORDS}, b.getI32Type()));
    NamedAttrList attrs;
    attrs.append(nn::attr::kInput, b.getStringAttr(nn::attr::kDropoutKey));
    argAttrs.push_back(attrs);
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  // All argument attributes at once: setting them one by one rebuilds the
  // array of every argument's attributes each time, which made the import
  // quadratic in the layer count (docs/models.md, "Limits").
  SmallVector<DictionaryAttr> argDicts;
  for (NamedAttrList &attrs : argAttrs)
    argDicts.push_back(attrs.getDictionary(&ctx));
  auto fn = b.create<func::FuncOp>(
      b.getUnknownLoc(), config.name,
      b.getFunctionType(argTypes, {RankedTensorType::get({}, f32)}),
      ArrayRef<NamedAttribute>(), argDicts);
  fn->setAttr(nn::attr::kModel,
              ModelAttr::get(&ctx, stringifyModelFamily(config.family), L, h,
                             config.heads, config.vocab, config.maxPositions,
                             config.seqLen, config.microbatchSize,
                             postNorm() ? nn::NormPosition::Post
                                        : nn::NormPosition::Pre));
  body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);

  setLayer(0);
  Value x = llama ? create<EmbeddingOp>(arg(tokens), arg(wte), Value())
                  : create<EmbeddingOp>(arg(tokens), arg(wte),
                                        arg(paramIndex["embed.positions"]));
  // The embeddings' norm belongs to layer 0, so the first stage holds it.
  if (postNorm())
    x = layerNorm(x, "embed.ln");
  x = dropout(x, config.embeddingDropout, embeddingDropoutSite());
  for (int64_t i = 0; i < L; ++i) {
    enterLayer(i);
    x = llama        ? llamaLayer(x, i)
        : postNorm() ? postNormLayer(x, i)
                     : transformerLayer(x, i);
  }
  enterLayer(L); // the head: the unit after the last layer's
  Value logits;
  if (llama) {
    x = rmsNorm(x, "final_ln");
    // Untied: the head's own weight; tied: the token embedding's.
    Value head =
        config.tieEmbeddings ? arg(wte) : arg(paramIndex["head.weight"]);
    logits = create<LinearOp>(x, head, Value());
  } else if (bert) {
    if (!postNorm())
      x = layerNorm(x, "final_ln");
    Value t = gelu(linear(x, "head.dense"));
    t = layerNorm(t, "head.ln");
    logits = create<LinearOp>(t, arg(wte), arg(paramIndex["head.bias"]));
  } else {
    x = layerNorm(x, "final_ln");
    logits = create<LinearOp>(x, arg(wte), Value());
  }
  Value loss = create<CrossEntropyOp>(logits, arg(labels),
                                      b.getI64IntegerAttr(-100));
  b.create<func::ReturnOp>(b.getUnknownLoc(), loss);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> bitpipe::buildModel(MLIRContext &context,
                                          const ModelConfig &config,
                                          PartitionUnits units) {
  context.loadDialect<NNDialect, func::FuncDialect>();
  return ModelBuilder(context, config, units).build();
}
