//===- NNOps.cpp - nn operations: shape inference and verifiers -----------===//
//
// Each forward op has one shape function that both infers the result type
// and, given an error emitter, explains what is wrong with its operands. The
// verifier and InferTypeOpInterface share it, so they cannot disagree.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "bitpipe/Dialect/NN/IR/ModelLimits.h"
#include "bitpipe/abi/Dropout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace bitpipe::nn;

namespace {

/// Produces the diagnostic of the op being checked; null when only inferring
/// (the diagnostic is then dropped).
using ErrorFn = llvm::function_ref<InFlightDiagnostic()>;

bool sameDim(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

bool sameShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto p) {
           return sameDim(std::get<0>(p), std::get<1>(p));
         });
}

std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Every value in `values` has the element type of the first one.
LogicalResult checkElementTypes(ErrorFn emitError, ValueRange values,
                                ArrayRef<StringRef> names) {
  Type expected = tensorType(values[0]).getElementType();
  for (auto [value, name] : llvm::zip(values, names)) {
    Type got = tensorType(value).getElementType();
    if (got != expected)
      return emitError() << "expects " << name << " to have element type "
                         << expected << " (as " << names[0] << "), got "
                         << got;
  }
  return success();
}

LogicalResult checkRank(ErrorFn emitError, RankedTensorType type,
                        StringRef name, int64_t rank, StringRef layout) {
  if (type.getRank() != rank)
    return emitError() << "expects " << name << " of rank " << rank << " "
                       << layout << ", got " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Shape functions of the forward ops.
//===----------------------------------------------------------------------===//

FailureOr<Type> inferEmbedding(ErrorFn emitError, Value tokens, Value wte,
                               Value wpe) {
  auto tokType = tensorType(tokens), wteType = tensorType(wte);
  if (failed(checkRank(emitError, tokType, "tokens", 2, "[batch, seq]")) ||
      failed(checkRank(emitError, wteType, "wte", 2, "[vocab, hidden]")))
    return failure();
  int64_t hidden = wteType.getDimSize(1), seq = tokType.getDimSize(1);
  // Without a position table (rotary models) there is nothing more to check.
  if (wpe) {
    auto wpeType = tensorType(wpe);
    if (failed(checkRank(emitError, wpeType, "wpe", 2,
                         "[max_positions, hidden]")) ||
        failed(checkElementTypes(emitError, {wte, wpe}, {"wte", "wpe"})))
      return failure();
    if (!sameDim(wpeType.getDimSize(1), hidden))
      return emitError() << "expects wpe's hidden size "
                         << dimStr(wpeType.getDimSize(1))
                         << " to equal wte's " << dimStr(hidden);
    int64_t maxPos = wpeType.getDimSize(0);
    if (!ShapedType::isDynamic(seq) && !ShapedType::isDynamic(maxPos) &&
        seq > maxPos)
      return emitError() << "sequence length " << seq
                         << " exceeds the position table's " << maxPos
                         << " rows";
  }
  return Type(RankedTensorType::get({tokType.getDimSize(0), seq, hidden},
                                    wteType.getElementType()));
}

FailureOr<Type> inferLayerNorm(ErrorFn emitError, Value input, Value gamma,
                               Value beta) {
  auto inType = tensorType(input);
  if (inType.getRank() < 1)
    return emitError() << "expects an input of rank >= 1, got " << inType;
  if (failed(checkElementTypes(emitError, {input, gamma, beta},
                               {"input", "gamma", "beta"})))
    return failure();
  int64_t features = inType.getShape().back();
  for (auto [value, name] : {std::pair{gamma, "gamma"}, {beta, "beta"}}) {
    auto type = tensorType(value);
    if (type.getRank() != 1 || !sameDim(type.getDimSize(0), features))
      return emitError() << "expects " << name << " of shape ["
                         << dimStr(features)
                         << "] (the input's last dimension), got " << type;
  }
  return Type(inType);
}

FailureOr<Type> inferRMSNorm(ErrorFn emitError, Value input, Value gamma) {
  auto inType = tensorType(input);
  if (inType.getRank() < 1)
    return emitError() << "expects an input of rank >= 1, got " << inType;
  if (failed(checkElementTypes(emitError, {input, gamma}, {"input", "gamma"})))
    return failure();
  int64_t features = inType.getShape().back();
  auto type = tensorType(gamma);
  if (type.getRank() != 1 || !sameDim(type.getDimSize(0), features))
    return emitError() << "expects gamma of shape [" << dimStr(features)
                       << "] (the input's last dimension), got " << type;
  return Type(inType);
}

/// Both operands of an element-wise binary op have one type, the result's.
FailureOr<Type> inferSameTypes(ErrorFn emitError, Value lhs, StringRef lhsName,
                               Value rhs, StringRef rhsName) {
  if (lhs.getType() != rhs.getType())
    return emitError() << "expects " << lhsName << " and " << rhsName
                       << " of one type, got " << lhs.getType() << " and "
                       << rhs.getType();
  return lhs.getType();
}

/// The rotary base (rope_theta) is positive and finite: angles are
/// t * base^(-2i/d).
LogicalResult checkRotaryBase(ErrorFn emitError, llvm::APFloat base) {
  double value = base.convertToDouble();
  if (!(value > 0.0) || std::isinf(value))
    return emitError() << "expects 'base' (rope_theta) to be a positive "
                          "finite number, got "
                       << value;
  return success();
}

FailureOr<Type> inferLinear(ErrorFn emitError, Value input, Value weight,
                            Value bias) {
  auto inType = tensorType(input), wType = tensorType(weight);
  if (inType.getRank() < 1)
    return emitError() << "expects an input of rank >= 1, got " << inType;
  if (failed(checkRank(emitError, wType, "weight", 2, "[out, in]")))
    return failure();
  SmallVector<Value> values = {input, weight};
  SmallVector<StringRef> names = {"input", "weight"};
  if (bias) {
    values.push_back(bias);
    names.push_back("bias");
  }
  if (failed(checkElementTypes(emitError, values, names)))
    return failure();
  int64_t in = inType.getShape().back(), out = wType.getDimSize(0);
  if (!sameDim(wType.getDimSize(1), in))
    return emitError() << "expects weight of shape [out, " << dimStr(in)
                       << "] (in = the input's last dimension), got " << wType;
  if (bias) {
    auto bType = tensorType(bias);
    if (bType.getRank() != 1 || !sameDim(bType.getDimSize(0), out))
      return emitError() << "expects bias of shape [" << dimStr(out)
                         << "] (the weight's out dimension), got " << bType;
  }
  SmallVector<int64_t> shape(inType.getShape());
  shape.back() = out;
  return Type(RankedTensorType::get(shape, inType.getElementType()));
}

/// The head geometry of a fused q/k/v tensor [B, T, (heads + 2 kvHeads) d]
/// (nn.attention's and nn.rotary's operand).
struct FusedHeads {
  int64_t headDim; ///< d
  int64_t hidden;  ///< heads * d, the attention's output width
};

/// Checks a fused q/k/v type against the head counts; \p kvHeads is empty
/// for plain multi-head attention (the [B, T, 3H] layout).
FailureOr<FusedHeads> inferFusedHeads(ErrorFn emitError, Value qkv,
                                      int64_t numHeads,
                                      std::optional<int64_t> kvHeads) {
  auto type = tensorType(qkv);
  if (failed(checkRank(emitError, type, "qkv", 3,
                       kvHeads ? "[batch, seq, (heads + 2 * kv_heads) * "
                                 "head_dim]"
                               : "[batch, seq, 3 * hidden]")))
    return failure();
  int64_t fused = type.getDimSize(2);
  if (ShapedType::isDynamic(fused))
    return emitError() << "expects a static fused q/k/v dimension, got "
                       << type;
  if (!kvHeads) {
    if (fused % 3 != 0)
      return emitError() << "expects the last dimension of qkv (" << fused
                         << ") to be 3 * hidden";
    int64_t hidden = fused / 3;
    if (numHeads <= 0 || hidden % numHeads != 0)
      return emitError() << "expects hidden size " << hidden
                         << " to be a multiple of num_heads (" << numHeads
                         << ")";
    return FusedHeads{hidden / numHeads, hidden};
  }
  if (*kvHeads <= 0 || numHeads <= 0 || numHeads % *kvHeads != 0)
    return emitError() << "expects num_kv_heads (" << *kvHeads
                       << ") to divide num_heads (" << numHeads << ")";
  int64_t slots = numHeads + 2 * *kvHeads;
  if (fused % slots != 0)
    return emitError() << "expects the last dimension of qkv (" << fused
                       << ") to be (num_heads + 2 * num_kv_heads) * head_dim "
                          "= "
                       << slots << " * head_dim";
  int64_t d = fused / slots;
  return FusedHeads{d, numHeads * d};
}

std::optional<int64_t> kvHeadsOf(std::optional<uint64_t> attr) {
  if (!attr)
    return std::nullopt;
  return int64_t(*attr);
}

FailureOr<Type> inferAttention(ErrorFn emitError, Value qkv, int64_t numHeads,
                               std::optional<int64_t> kvHeads) {
  FailureOr<FusedHeads> heads =
      inferFusedHeads(emitError, qkv, numHeads, kvHeads);
  if (failed(heads))
    return failure();
  auto type = tensorType(qkv);
  return Type(RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1), heads->hidden},
      type.getElementType()));
}

/// The log-sum-exps an attention over \p qkv keeps for its backward:
/// [B, num_heads, T] f32, row (b, h, t) at (b num_heads + h) T + t, the
/// kernels' layout (runtime/include/bitpipe/abi/Kernels.h).
Type attentionLseType(Value qkv, int64_t numHeads) {
  auto type = tensorType(qkv);
  return RankedTensorType::get(
      {type.getDimSize(0), numHeads, type.getDimSize(1)},
      Float32Type::get(qkv.getContext()));
}

/// A norm's row statistics (mean, rstd): one f32 per row of \p input, the
/// input's shape without its last dimension.
Type normStatType(Value input) {
  auto type = tensorType(input);
  return RankedTensorType::get(type.getShape().drop_back(),
                               Float32Type::get(input.getContext()));
}

/// The statistics a norm with \p count of them returns or reads: none, or
/// \p count values of normStatType.
LogicalResult checkNormStats(ErrorFn emitError, Value input, ValueRange stats,
                             unsigned count, StringRef what) {
  if (stats.empty())
    return success();
  if (stats.size() != count)
    return emitError() << "expects " << count << " statistics (" << what
                       << ") or none, got " << stats.size();
  Type want = normStatType(input);
  for (Value v : stats)
    if (v.getType() != want)
      return emitError() << "expects statistics of type " << want << " ("
                         << what << ", one f32 per row of the input), got "
                         << v.getType();
  return success();
}

/// Rotary rotates pairs (i, i + d/2) of each head: d must be even.
FailureOr<Type> inferRotary(ErrorFn emitError, Value qkv, int64_t numHeads,
                            std::optional<int64_t> kvHeads) {
  FailureOr<FusedHeads> heads =
      inferFusedHeads(emitError, qkv, numHeads, kvHeads);
  if (failed(heads))
    return failure();
  if (heads->headDim % 2 != 0)
    return emitError() << "expects an even head dimension (rotary rotates "
                          "pairs of features), got "
                       << heads->headDim;
  return Type(qkv.getType());
}

FailureOr<Type> inferCrossEntropy(ErrorFn emitError, Value logits,
                                  Value labels) {
  auto lType = tensorType(logits), yType = tensorType(labels);
  if (lType.getRank() < 2)
    return emitError() << "expects logits of rank >= 2 [..., vocab], got "
                       << lType;
  if (!sameShape(lType.getShape().drop_back(), yType.getShape()))
    return emitError() << "expects labels shaped as the logits without their "
                          "last (vocab) dimension, got logits "
                       << lType << " and labels " << yType;
  return Type(RankedTensorType::get({}, Float32Type::get(logits.getContext())));
}

/// The op's single result has the type its shape function inferred.
LogicalResult checkInferred(Operation *op, ErrorFn emitError,
                            FailureOr<Type> inferred) {
  if (failed(inferred))
    return failure();
  Type got = op->getResult(0).getType();
  auto gotTensor = cast<RankedTensorType>(got);
  auto want = cast<RankedTensorType>(*inferred);
  if (gotTensor.getElementType() == want.getElementType() &&
      sameShape(gotTensor.getShape(), want.getShape()))
    return success();
  return emitError() << "expects result type " << *inferred
                     << " (inferred from the operands), got " << got;
}

/// The layer-norm epsilon is in the importer's range (ModelLimits.h): a
/// NaN, infinite, zero, negative or >= 1 epsilon makes nonsense of the
/// normalisation.
LogicalResult checkEpsilon(ErrorFn emitError, llvm::APFloat epsilon) {
  if (std::optional<std::string> error =
          checkLayerNormEpsilon(epsilon.convertToDouble()))
    return emitError() << "expects 'epsilon' " << *error;
  return success();
}

/// A dropout key is BP_DROPOUT_KEY_WORDS i32 words (NN_KeyTensor says i32).
LogicalResult checkKey(ErrorFn emitError, Value key) {
  auto type = tensorType(key);
  if (type.getRank() == 1 && type.getDimSize(0) == BP_DROPOUT_KEY_WORDS)
    return success();
  return emitError() << "expects a dropout key of type tensor<"
                     << BP_DROPOUT_KEY_WORDS << "xi32>, got " << type;
}

/// An attention op drops its probabilities with both a key and a
/// #nn.dropout, or neither; and only without grouping (the grouped-query
/// kernels have no dropout: the LLaMA family trains without it).
LogicalResult checkAttentionDropout(ErrorFn emitError, Value key,
                                    DropoutAttr dropout,
                                    std::optional<int64_t> kvHeads,
                                    int64_t numHeads) {
  if (!key && !dropout)
    return success();
  if (!key || !dropout)
    return emitError() << "expects a dropout key and a #nn.dropout together, "
                          "got only the "
                       << (key ? "key" : "#nn.dropout");
  if (kvHeads && *kvHeads != numHeads)
    return emitError() << "drops attention probabilities only without "
                          "grouping (kv_heads "
                       << *kvHeads << " of " << numHeads << " heads)";
  return checkKey(emitError, key);
}

/// Stores the inferred type, or fails.
LogicalResult storeInferred(FailureOr<Type> type,
                            SmallVectorImpl<Type> &inferred) {
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Forward ops: InferTypeOpInterface and verifiers share the shape functions.
//===----------------------------------------------------------------------===//

// The shape functions report problems during verification; during inference
// (builders, parsing) they stay silent, and the verifier reports them later.
// CHECK_ATTRS is an extra check of the op's attributes, run first.
#define NN_DEFINE_CHECKED_INFERENCE(OP, CALL, CHECK_ATTRS)                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,   \
                                     OP::Adaptor adaptor,                      \
                                     SmallVectorImpl<Type> &inferred) {        \
    auto emitError = [] { return InFlightDiagnostic(); };                      \
    (void)emitError;                                                           \
    return storeInferred(CALL, inferred);                                      \
  }                                                                            \
  LogicalResult OP::verify() {                                                 \
    auto emitError = [this] { return emitOpError(); };                         \
    auto adaptor = OP::Adaptor(*this);                                         \
    if (failed(CHECK_ATTRS))                                                   \
      return failure();                                                        \
    return checkInferred(*this, emitError, CALL);                              \
  }
#define NN_DEFINE_INFERENCE(OP, CALL)                                          \
  NN_DEFINE_CHECKED_INFERENCE(OP, CALL, success())

NN_DEFINE_INFERENCE(EmbeddingOp,
                    inferEmbedding(emitError, adaptor.getTokens(),
                                   adaptor.getWte(), adaptor.getWpe()))
// Ops whose statistics are further results with `with_stats`, one f32 per
// row of their operand ROWS (the norms' input, cross-entropy's logits);
// CHECK is what the op checks beyond its shapes.
#define NN_DEFINE_STATS_INFERENCE(OP, CALL, CHECK, ROWS, STATS, WHAT)          \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,   \
                                     OP::Adaptor adaptor,                      \
                                     SmallVectorImpl<Type> &inferred) {        \
    auto emitError = [] { return InFlightDiagnostic(); };                      \
    (void)emitError;                                                           \
    if (failed(storeInferred(CALL, inferred)))                                 \
      return failure();                                                        \
    if (adaptor.getWithStats())                                                \
      inferred.append(STATS, normStatType(adaptor.get##ROWS()));               \
    return success();                                                          \
  }                                                                            \
  LogicalResult OP::verify() {                                                 \
    auto emitError = [this] { return emitOpError(); };                         \
    auto adaptor = OP::Adaptor(*this);                                         \
    if (failed(CHECK) || failed(checkInferred(*this, emitError, CALL)))        \
      return failure();                                                        \
    if (getWithStats() != !getStats().empty())                                 \
      return emitOpError() << (getWithStats()                                  \
                                   ? "with 'with_stats' expects its "          \
                                     "statistics (" WHAT ") as results"        \
                                   : "expects one result without "             \
                                     "'with_stats'");                          \
    return checkNormStats(emitError, get##ROWS(), getStats(), STATS, WHAT);    \
  }
NN_DEFINE_STATS_INFERENCE(LayerNormOp,
                          inferLayerNorm(emitError, adaptor.getInput(),
                                         adaptor.getGamma(), adaptor.getBeta()),
                          checkEpsilon(emitError, getEpsilon()), Input, 2,
                          "mean, rstd")
NN_DEFINE_INFERENCE(LinearOp,
                    inferLinear(emitError, adaptor.getInput(),
                                adaptor.getWeight(), adaptor.getBias()))
NN_DEFINE_STATS_INFERENCE(
    RMSNormOp, inferRMSNorm(emitError, adaptor.getInput(), adaptor.getGamma()),
    checkEpsilon(emitError, getEpsilon()), Input, 1, "rstd")

// Attention has a second result with `with_stats`: the log-sum-exps.
LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            AttentionOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto emitError = [] { return InFlightDiagnostic(); };
  int64_t heads = adaptor.getNumHeadsAttr().getInt();
  if (failed(storeInferred(inferAttention(emitError, adaptor.getQkv(), heads,
                                          kvHeadsOf(adaptor.getNumKvHeads())),
                           inferred)))
    return failure();
  if (adaptor.getWithStats())
    inferred.push_back(attentionLseType(adaptor.getQkv(), heads));
  return success();
}
NN_DEFINE_CHECKED_INFERENCE(RotaryOp,
                            inferRotary(emitError, adaptor.getQkv(),
                                        adaptor.getNumHeadsAttr().getInt(),
                                        kvHeadsOf(adaptor.getNumKvHeads())),
                            checkRotaryBase(emitError, getBase()))
NN_DEFINE_INFERENCE(SwiGLUOp,
                    inferSameTypes(emitError, adaptor.getGate(), "gate",
                                   adaptor.getUp(), "up"))
NN_DEFINE_INFERENCE(GeluOp, FailureOr<Type>(adaptor.getInput().getType()))
NN_DEFINE_CHECKED_INFERENCE(DropoutOp,
                            FailureOr<Type>(adaptor.getInput().getType()),
                            checkKey(emitError, getKey()))
NN_DEFINE_STATS_INFERENCE(CrossEntropyOp,
                          inferCrossEntropy(emitError, adaptor.getLogits(),
                                            adaptor.getLabels()),
                          success(), Logits, 2, "row max, log-sum")
#undef NN_DEFINE_STATS_INFERENCE
#undef NN_DEFINE_INFERENCE
#undef NN_DEFINE_CHECKED_INFERENCE

LogicalResult AddOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                      AddOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getLhs().getType());
  return success();
}

LogicalResult AddOp::verify() {
  if (getLhs().getType() != getRhs().getType())
    return emitOpError() << "expects operands of one type (no broadcasting), "
                            "got "
                         << getLhs().getType() << " and "
                         << getRhs().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops: their operand and result shapes follow from the forward's.
//===----------------------------------------------------------------------===//

namespace {
/// Checks that `value` has exactly `expected` (shape and element type).
LogicalResult expectType(ErrorFn emitError, Value value, StringRef name,
                         Type expected, StringRef why) {
  if (!expected || value.getType() == expected)
    return success();
  auto got = tensorType(value), want = cast<RankedTensorType>(expected);
  if (got.getElementType() == want.getElementType() &&
      sameShape(got.getShape(), want.getShape()))
    return success();
  return emitError() << "expects " << name << " of type " << expected << " ("
                     << why << "), got " << value.getType();
}
} // namespace

LogicalResult EmbeddingGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  FailureOr<Type> fwd =
      inferEmbedding(emitError, getTokens(), getWteGrad(), getWpeGrad());
  if (failed(fwd))
    return failure();
  return expectType(emitError, getGrad(), "grad", *fwd,
                    "the embedding's output");
}

LogicalResult LayerNormGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  if (failed(checkEpsilon(emitError, getEpsilon())))
    return failure();
  if (failed(inferLayerNorm(emitError, getInput(), getGamma(), getGamma())) ||
      failed(
          checkNormStats(emitError, getInput(), getStats(), 2, "mean, rstd")))
    return failure();
  Type in = getInput().getType(), gamma = getGamma().getType();
  return success(
      succeeded(expectType(emitError, getGrad(), "grad", in, "as the input")) &&
      succeeded(expectType(emitError, getInputGrad(), "input_grad", in,
                           "as the input")) &&
      succeeded(expectType(emitError, getGammaGrad(), "gamma_grad", gamma,
                           "as gamma")) &&
      succeeded(expectType(emitError, getBetaGrad(), "beta_grad", gamma,
                           "as gamma")));
}

LogicalResult RMSNormGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  if (failed(checkEpsilon(emitError, getEpsilon())))
    return failure();
  if (failed(inferRMSNorm(emitError, getInput(), getGamma())) ||
      failed(checkNormStats(emitError, getInput(), getStats(), 1, "rstd")))
    return failure();
  Type in = getInput().getType(), gamma = getGamma().getType();
  return success(
      succeeded(expectType(emitError, getGrad(), "grad", in, "as the input")) &&
      succeeded(expectType(emitError, getInputGrad(), "input_grad", in,
                           "as the input")) &&
      succeeded(expectType(emitError, getGammaGrad(), "gamma_grad", gamma,
                           "as gamma")));
}

LogicalResult LinearInputGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  // The forward maps input_grad's type to grad's type through `weight`.
  FailureOr<Type> fwd =
      inferLinear(emitError, getInputGrad(), getWeight(), Value());
  if (failed(fwd))
    return failure();
  return expectType(emitError, getGrad(), "grad", *fwd,
                    "the linear op's output");
}

LogicalResult LinearWeightGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  FailureOr<Type> fwd =
      inferLinear(emitError, getInput(), getWeightGrad(), getBiasGrad());
  if (failed(fwd))
    return failure();
  return expectType(emitError, getGrad(), "grad", *fwd,
                    "the linear op's output");
}

LogicalResult AttentionOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  if (failed(checkAttentionDropout(emitError, getKey(), getDropoutAttr(),
                                   kvHeadsOf(getNumKvHeads()),
                                   getNumHeads())) ||
      failed(checkInferred(*this, emitError,
                           inferAttention(emitError, getQkv(), getNumHeads(),
                                          kvHeadsOf(getNumKvHeads())))))
    return failure();
  if (getWithStats() != static_cast<bool>(getLse()))
    return emitOpError() << (getWithStats()
                                 ? "with 'with_stats' expects a second result, "
                                   "the log-sum-exps"
                                 : "expects one result without 'with_stats'");
  if (getLse())
    return expectType(emitError, getLse(), "lse",
                      attentionLseType(getQkv(), getNumHeads()),
                      "[B, num_heads, T] f32");
  return success();
}

LogicalResult AttentionGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  if (failed(checkAttentionDropout(emitError, getKey(), getDropoutAttr(),
                                   kvHeadsOf(getNumKvHeads()), getNumHeads())))
    return failure();
  FailureOr<Type> fwd = inferAttention(emitError, getQkv(),
                                       getNumHeadsAttr().getInt(),
                                       kvHeadsOf(getNumKvHeads()));
  if (failed(fwd))
    return failure();
  if (static_cast<bool>(getOut()) != static_cast<bool>(getLse()))
    return emitOpError() << "expects both saved values, the forward's output "
                            "and its log-sum-exps, or neither";
  if (getOut() && (failed(expectType(emitError, getOut(), "out", *fwd,
                                     "the attention's output")) ||
                   failed(expectType(emitError, getLse(), "lse",
                                     attentionLseType(getQkv(), getNumHeads()),
                                     "[B, num_heads, T] f32"))))
    return failure();
  return success(
      succeeded(expectType(emitError, getGrad(), "grad", *fwd,
                           "the attention's output")) &&
      succeeded(expectType(emitError, getQkvGrad(), "qkv_grad",
                           getQkv().getType(), "as qkv")));
}

LogicalResult RotaryGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  if (failed(checkRotaryBase(emitError, getBase())) ||
      failed(inferRotary(emitError, getGrad(), getNumHeadsAttr().getInt(),
                         kvHeadsOf(getNumKvHeads()))))
    return failure();
  return expectType(emitError, getQkvGrad(), "qkv_grad", getGrad().getType(),
                    "as grad");
}

LogicalResult GeluGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  Type in = getInput().getType();
  return success(
      succeeded(expectType(emitError, getGrad(), "grad", in, "as the input")) &&
      succeeded(expectType(emitError, getInputGrad(), "input_grad", in,
                           "as the input")));
}

LogicalResult SwiGLUGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  FailureOr<Type> in =
      inferSameTypes(emitError, getGate(), "gate", getUp(), "up");
  if (failed(in))
    return failure();
  return success(
      succeeded(expectType(emitError, getGrad(), "grad", *in, "as gate")) &&
      succeeded(expectType(emitError, getGateGrad(), "gate_grad", *in,
                           "as gate")) &&
      succeeded(expectType(emitError, getUpGrad(), "up_grad", *in,
                           "as up")));
}

LogicalResult CrossEntropyGradOp::verify() {
  auto emitError = [this] { return emitOpError(); };
  if (failed(inferCrossEntropy(emitError, getLogits(), getLabels())) ||
      failed(checkNormStats(emitError, getLogits(), getStats(), 2,
                            "row max, log-sum")))
    return failure();
  return expectType(emitError, getLogitsGrad(), "logits_grad",
                    getLogits().getType(), "as the logits");
}

#define GET_OP_CLASSES
#include "bitpipe/Dialect/NN/IR/NNOps.cpp.inc"
