//===- Manifest.cpp - The manifest of program.h, from the module ----------===//
//
// Roles come from the attributes bitpipe-import, bitpipe-partition and
// bitpipe-generate-backward write (StageAttrNames.h). A backward keeps the
// attributes of the forward arguments it reads (a parameter argument of a
// backward has `nn.param` and `bitpipe.forward_arg`), so the more specific
// attribute decides: the runtime binds such an argument from the forward's
// call, as program.h's "forward_arg" says.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include "bitpipe/Conversion/Target/StorageType.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/NN/IR/DropoutSites.h"
#include "bitpipe/Dialect/NN/IR/NNAttrs.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::manifest;

StringRef manifest::stringifyFunctionKind(FunctionKind kind) {
  return bp_function_kind_names[static_cast<int>(kind)];
}

Function manifest::describeFunction(const StageFunction &function) {
  Function entry;
  entry.name = func::FuncOp(function.fn).getSymName().str();
  entry.kind = static_cast<bp_function_kind>(function.kind);
  entry.stage = function.stage;
  entry.args = function.args;
  entry.results = function.results;
  return entry;
}

//===----------------------------------------------------------------------===//
// Roles
//===----------------------------------------------------------------------===//

namespace {

/// The manifest's word for an nn initialiser (abi/ManifestKeys.def).
bp_init_kind manifestInitKind(nn::InitKind kind) {
  switch (kind) {
  case nn::InitKind::Normal:
    return BP_INIT_NORMAL;
  case nn::InitKind::Zeros:
    return BP_INIT_ZEROS;
  case nn::InitKind::Ones:
    return BP_INIT_ONES;
  }
  llvm_unreachable("every nn::InitKind has a manifest word");
}

/// The index an integer role attribute carries, if `attrs` has it.
std::optional<int64_t> indexOf(DictionaryAttr attrs, StringRef name) {
  if (!attrs)
    return std::nullopt;
  auto index = attrs.getAs<IntegerAttr>(name);
  if (!index)
    return std::nullopt;
  return index.getInt();
}

std::optional<std::string> nameOf(DictionaryAttr attrs, StringRef name) {
  if (!attrs)
    return std::nullopt;
  auto text = attrs.getAs<StringAttr>(name);
  if (!text)
    return std::nullopt;
  return text.str();
}

Role indexedRole(bp_role_kind kind, int64_t index) {
  Role r;
  r.kind = kind;
  r.index = index;
  return r;
}

Role ofParam(std::string name) {
  Role r;
  r.kind = BP_ROLE_PARAM;
  r.param = std::move(name);
  return r;
}

/// The role of argument `i`, or nothing when `kind` allows none of its
/// attributes. An input the manifest has no word for is an error at the
/// function (and a failure).
FailureOr<std::optional<Role>> argumentRole(func::FuncOp fn, FunctionKind kind,
                                            unsigned i) {
  DictionaryAttr attrs = fn.getArgAttrDict(i);
  if (kind == FunctionKind::Forward) {
    if (auto param = nameOf(attrs, nn::attr::kParam))
      return std::optional<Role>(ofParam(*param));
    if (auto input = nameOf(attrs, nn::attr::kInput)) {
      int word = findWord(bp_input_kind_names, *input);
      if (word < 0)
        return fn.emitError()
               << "has argument #" << i << " with input \"" << *input
               << "\", which the manifest has no word for "
                  "(bitpipe/abi/ManifestKeys.def)";
      Role r;
      r.kind = BP_ROLE_INPUT;
      r.input = static_cast<bp_input_kind>(word);
      return std::optional<Role>(r);
    }
    Role r;
    r.kind = BP_ROLE_ACTIVATION;
    return std::optional<Role>(r);
  }
  if (auto k = indexOf(attrs, attr::kSaved))
    return std::optional<Role>(indexedRole(BP_ROLE_SAVED, *k));
  if (auto k = indexOf(attrs, attr::kStash))
    return std::optional<Role>(indexedRole(BP_ROLE_STASH, *k));
  if (auto j = indexOf(attrs, attr::kGradOfResult))
    return std::optional<Role>(indexedRole(BP_ROLE_GRAD_OF_RESULT, *j));
  if (auto a = indexOf(attrs, attr::kForwardArg))
    return std::optional<Role>(indexedRole(BP_ROLE_FORWARD_ARG, *a));
  if (auto param = nameOf(attrs, nn::attr::kParam))
    return std::optional<Role>(ofParam(*param));
  return std::optional<Role>();
}

std::optional<Role> resultRole(func::FuncOp fn, FunctionKind kind, unsigned i) {
  DictionaryAttr attrs = fn.getResultAttrDict(i);
  if (kind == FunctionKind::Forward) {
    if (auto k = indexOf(attrs, attr::kSaved))
      return indexedRole(BP_ROLE_SAVED, *k);
    Role r;
    r.kind = BP_ROLE_OUTPUT;
    return r;
  }
  // A parameter's gradient also says which argument it is the gradient of;
  // the runtime needs the parameter.
  if (auto param = nameOf(attrs, nn::attr::kParam))
    return ofParam(*param);
  if (auto a = indexOf(attrs, attr::kGradOfArg))
    return indexedRole(BP_ROLE_GRAD_OF_ARG, *a);
  if (auto k = indexOf(attrs, attr::kStash))
    return indexedRole(BP_ROLE_STASH, *k);
  return std::nullopt;
}

/// The buffer type of a value, or null when the runtime has none for it.
RankedTensorType bufferType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return {};
  Type element = tensor.getElementType();
  if (!element.isF32() && !element.isSignlessInteger(32))
    return {};
  return tensor;
}

/// The manifest's dtype of a buffer of element type \p element.
bp_dtype dtypeOf(Type element) {
  if (element.isBF16())
    return BP_DTYPE_BF16;
  if (element.isF64())
    return BP_DTYPE_F64;
  return element.isF32() ? BP_DTYPE_F32 : BP_DTYPE_I32;
}

/// "[256, 64]".
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

} // namespace

LogicalResult manifest::describeRoles(StageFunction &function,
                                      TargetKind target, Precision precision) {
  func::FuncOp fn = function.fn;
  StringRef kind = stringifyFunctionKind(function.kind);
  auto badType = [&](StringRef what, unsigned i, Type type) {
    return fn.emitError() << "has " << what << " #" << i << " of type " << type
                          << "; expected a statically shaped tensor of f32 "
                             "or i32, which the runtime can hold";
  };

  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    FailureOr<std::optional<Role>> role = argumentRole(fn, function.kind, i);
    if (failed(role))
      return failure();
    if (!*role)
      return fn.emitError()
             << "has argument #" << i << " without a role; expected a " << kind
             << " argument to carry '" << attr::kForwardArg << "', '"
             << attr::kSaved << "', '" << attr::kGradOfResult << "', '"
             << attr::kStash << "' or '" << nn::attr::kParam << "'";
    RankedTensorType type = bufferType(fn.getArgumentTypes()[i]);
    if (!type)
      return badType("argument", i, fn.getArgumentTypes()[i]);
    (*role)->shape.assign(type.getShape().begin(), type.getShape().end());
    // A declaration (tests) has no values: its arguments are read, never
    // gradients.
    (*role)->dtype = dtypeOf(getElementTypeOrSelf(
        fn.isExternal()
            ? storageType(type, /*parameterGradient=*/false, precision)
            : storageType(fn.getArgument(i), precision)));
    function.args.push_back(std::move(**role));
  }
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i) {
    std::optional<Role> role = resultRole(fn, function.kind, i);
    if (!role)
      return fn.emitError()
             << "has result #" << i << " without a role; expected a " << kind
             << " result to carry '" << nn::attr::kParam << "', '"
             << attr::kGradOfArg << "' or '" << attr::kStash << "'";
    RankedTensorType type = bufferType(fn.getResultTypes()[i]);
    if (!type)
      return badType("result", i, fn.getResultTypes()[i]);
    role->shape.assign(type.getShape().begin(), type.getShape().end());
    // A parameter's gradient is accumulated in place: its slot holds the
    // rank's accumulator (bitpipe-lower-nn-to-runtime), in the target's
    // accumulator type. Other results: what the function returns.
    if (role->kind == BP_ROLE_PARAM) {
      role->dtype =
          gradientAccumulatorBits(target) == 64 ? BP_DTYPE_F64 : BP_DTYPE_F32;
    } else {
      Type stored =
          fn.isExternal()
              ? storageType(type, /*parameterGradient=*/false, precision)
              : storageType(fn.getBody().back().getTerminator()->getOperand(i),
                            precision);
      role->dtype = dtypeOf(getElementTypeOrSelf(stored));
    }
    function.results.push_back(std::move(*role));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and the model
//===----------------------------------------------------------------------===//

FailureOr<std::vector<Param>>
manifest::collectParams(ArrayRef<StageFunction> functions) {
  std::vector<Param> params;
  llvm::StringMap<size_t> index;
  for (const StageFunction &function : functions) {
    func::FuncOp fn = function.fn;
    for (auto [i, role] : llvm::enumerate(function.args)) {
      if (role.kind != BP_ROLE_PARAM)
        continue;
      auto [it, inserted] = index.try_emplace(role.param, params.size());
      if (!inserted) {
        if (params[it->second].shape != role.shape)
          return fn.emitError()
                 << "takes parameter \"" << role.param << "\" as "
                 << fn.getArgumentTypes()[i]
                 << ", but an earlier function takes it with shape "
                 << formatShape(params[it->second].shape)
                 << "; expected one shape per parameter";
        continue;
      }
      Param param;
      param.name = role.param;
      param.shape = role.shape;
      // Matrices (weights, embeddings) decay; vectors (biases, layer-norm
      // gains and biases) do not, as in GPT-2 and Megatron-LM.
      param.decay = role.shape.size() >= 2;
      // The nn dialect has verified the initialiser (a normal one has
      // its std); only its presence is left to check.
      auto init = fn.getArgAttrOfType<nn::InitAttr>(i, nn::attr::kInit);
      if (!init)
        return fn.emitError()
               << "has parameter \"" << role.param << "\" (argument #" << i
               << ") with no '" << nn::attr::kInit
               << "'; expected #nn.init<normal, std = ...>, #nn.init<zeros> "
                  "or #nn.init<ones>";
      param.init = manifestInitKind(init.getKind());
      if (std::optional<double> std = init.getStdDev())
        param.stddev = *std;
      params.push_back(std::move(param));
    }
  }
  return params;
}

LogicalResult manifest::readModel(func::FuncOp function, Model &model) {
  // The nn dialect has verified the configuration's fields.
  auto info = function->getAttrOfType<nn::ModelAttr>(nn::attr::kModel);
  if (!info)
    return function.emitError()
           << "has no '" << nn::attr::kModel
           << "'; expected the model's configuration as bitpipe-import "
              "writes it";
  int family = findWord(bp_model_family_names, info.getFamily());
  if (family < 0)
    return function.emitError() << "has model family \"" << info.getFamily()
                                << "\", which the manifest has no word for "
                                   "(bitpipe/abi/ManifestKeys.def)";
  model.name = function.getSymName().str();
  model.family = static_cast<bp_model_family>(family);
  model.vocab = info.getVocab();
  model.seqLen = info.getSeqLen();
  model.microbatchSize = info.getMicrobatchSize();
  // The last token id, as BERT-style masked LM training uses it.
  model.maskToken = info.getVocab() - 1;
  model.heads = info.getHeads();
  model.maxPositions = info.getMaxPositions();
  model.normPosition = info.getNormPosition() == nn::NormPosition::Post
                           ? BP_NORM_POSITION_POST
                           : BP_NORM_POSITION_PRE;
  // For a Hugging Face config.json (docs/huggingface.md): bitpipe-import
  // gives every norm of a model one epsilon, every rotary op one base and
  // every GELU one form. The ops are in the stage functions by now, not in
  // the model function.
  bool mixedGelu = false;
  function->getParentOfType<mlir::ModuleOp>().walk([&](Operation *op) {
    if (auto gelu = dyn_cast<nn::GeluOp>(op)) {
      bp_gelu_form form = gelu.getForm() == nn::GeluForm::Erf
                              ? BP_GELU_FORM_ERF
                              : BP_GELU_FORM_TANH;
      mixedGelu |= model.gelu && *model.gelu != form;
      model.gelu = form;
    }
    if (auto ln = dyn_cast<nn::LayerNormOp>(op); ln && !model.normEpsilon)
      model.normEpsilon = ln.getEpsilon().convertToDouble();
    if (auto rms = dyn_cast<nn::RMSNormOp>(op); rms && !model.normEpsilon)
      model.normEpsilon = rms.getEpsilon().convertToDouble();
    if (auto rot = dyn_cast<nn::RotaryOp>(op); rot && !model.ropeTheta)
      model.ropeTheta = rot.getBase().convertToDouble();
    // The dropout probabilities by where the importer put them
    // (DropoutSites.h); the backward's ops repeat their forward's.
    nn::DropoutAttr dropout;
    if (auto drop = dyn_cast<nn::DropoutOp>(op))
      dropout = drop.getDropout();
    if (auto attention = dyn_cast<nn::AttentionOp>(op))
      dropout = attention.getDropoutAttr();
    if (dropout) {
      std::optional<double> *slot = &model.residualDropout;
      switch (nn::dropoutSiteKind(dropout.getSite())) {
      case nn::DropoutSiteKind::Embedding:
        slot = &model.embeddingDropout;
        break;
      case nn::DropoutSiteKind::Attention:
        slot = &model.attentionDropout;
        break;
      case nn::DropoutSiteKind::AttentionOutput:
      case nn::DropoutSiteKind::MlpOutput:
        break;
      }
      *slot = dropout.getProbability().convertToDouble();
    }
  });
  if (mixedGelu)
    model.gelu.reset();
  return success();
}
