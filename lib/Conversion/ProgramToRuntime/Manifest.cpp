//===- Manifest.cpp - The manifest of program.h ---------------------------===//
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
#include "bitpipe/Dialect/NN/IR/NNAttrs.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::manifest;

StringRef manifest::stringifyFunctionKind(FunctionKind kind) {
  return bp_function_kind_names[static_cast<int>(kind)];
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

Role indexed(bp_role_kind kind, int64_t index) {
  Role r;
  r.kind = kind;
  r.index = index;
  return r;
}

Role named(bp_role_kind kind, std::string name) {
  Role r;
  r.kind = kind;
  r.name = std::move(name);
  return r;
}

/// The role of argument `i`, or nothing when `kind` allows none of its
/// attributes.
std::optional<Role> argumentRole(func::FuncOp fn, FunctionKind kind,
                                 unsigned i) {
  DictionaryAttr attrs = fn.getArgAttrDict(i);
  if (kind == FunctionKind::Forward) {
    if (auto param = nameOf(attrs, nn::attr::kParam))
      return named(BP_ROLE_PARAM, *param);
    if (auto input = nameOf(attrs, nn::attr::kInput))
      return named(BP_ROLE_INPUT, *input);
    return Role{BP_ROLE_ACTIVATION};
  }
  if (auto k = indexOf(attrs, attr::kSaved))
    return indexed(BP_ROLE_SAVED, *k);
  if (auto k = indexOf(attrs, attr::kStash))
    return indexed(BP_ROLE_STASH, *k);
  if (auto j = indexOf(attrs, attr::kGradOfResult))
    return indexed(BP_ROLE_GRAD_OF_RESULT, *j);
  if (auto a = indexOf(attrs, attr::kForwardArg))
    return indexed(BP_ROLE_FORWARD_ARG, *a);
  if (auto param = nameOf(attrs, nn::attr::kParam))
    return named(BP_ROLE_PARAM, *param);
  return std::nullopt;
}

std::optional<Role> resultRole(func::FuncOp fn, FunctionKind kind, unsigned i) {
  DictionaryAttr attrs = fn.getResultAttrDict(i);
  if (kind == FunctionKind::Forward) {
    if (auto k = indexOf(attrs, attr::kSaved))
      return indexed(BP_ROLE_SAVED, *k);
    return Role{BP_ROLE_OUTPUT};
  }
  // A parameter's gradient also says which argument it is the gradient of;
  // the runtime needs the parameter.
  if (auto param = nameOf(attrs, nn::attr::kParam))
    return named(BP_ROLE_PARAM, *param);
  if (auto a = indexOf(attrs, attr::kGradOfArg))
    return indexed(BP_ROLE_GRAD_OF_ARG, *a);
  if (auto k = indexOf(attrs, attr::kStash))
    return indexed(BP_ROLE_STASH, *k);
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

LogicalResult manifest::describeRoles(Function &function,
                                      Precision precision) {
  func::FuncOp fn = function.fn;
  StringRef kind = stringifyFunctionKind(function.kind);
  auto badType = [&](StringRef what, unsigned i, Type type) {
    return fn.emitError() << "has " << what << " #" << i << " of type " << type
                          << "; expected a statically shaped tensor of f32 "
                             "or i32, which the runtime can hold";
  };

  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    std::optional<Role> role = argumentRole(fn, function.kind, i);
    if (!role)
      return fn.emitError()
             << "has argument #" << i << " without a role; expected a " << kind
             << " argument to carry '" << attr::kForwardArg << "', '"
             << attr::kSaved << "', '" << attr::kGradOfResult << "', '"
             << attr::kStash << "' or '" << nn::attr::kParam << "'";
    role->type = bufferType(fn.getArgumentTypes()[i]);
    if (!role->type)
      return badType("argument", i, fn.getArgumentTypes()[i]);
    // A declaration (tests) has no values: its arguments are read, never
    // gradients.
    role->dtype = dtypeOf(getElementTypeOrSelf(
        fn.isExternal()
            ? storageType(role->type, /*parameterGradient=*/false, precision)
            : storageType(fn.getArgument(i), precision)));
    function.args.push_back(std::move(*role));
  }
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i) {
    std::optional<Role> role = resultRole(fn, function.kind, i);
    if (!role)
      return fn.emitError()
             << "has result #" << i << " without a role; expected a " << kind
             << " result to carry '" << nn::attr::kParam << "', '"
             << attr::kGradOfArg << "' or '" << attr::kStash << "'";
    role->type = bufferType(fn.getResultTypes()[i]);
    if (!role->type)
      return badType("result", i, fn.getResultTypes()[i]);
    // What the function returns decides; for a declaration (tests), the
    // role: a backward's "param" result is the parameter's gradient.
    Type stored =
        fn.isExternal()
            ? storageType(role->type, role->kind == BP_ROLE_PARAM, precision)
            : storageType(fn.getBody().back().getTerminator()->getOperand(i),
                          precision);
    role->dtype = dtypeOf(getElementTypeOrSelf(stored));
    function.results.push_back(std::move(*role));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and the model
//===----------------------------------------------------------------------===//

FailureOr<std::vector<Param>>
manifest::collectParams(ArrayRef<Function> functions) {
  std::vector<Param> params;
  llvm::StringMap<size_t> index;
  for (const Function &function : functions) {
    func::FuncOp fn = function.fn;
    for (auto [i, role] : llvm::enumerate(function.args)) {
      if (role.kind != BP_ROLE_PARAM)
        continue;
      ArrayRef<int64_t> shape = role.type.getShape();
      auto [it, inserted] = index.try_emplace(role.name, params.size());
      if (!inserted) {
        if (params[it->second].shape != shape)
          return fn.emitError()
                 << "takes parameter \"" << role.name << "\" as " << role.type
                 << ", but an earlier function takes it with shape "
                 << formatShape(params[it->second].shape)
                 << "; expected one shape per parameter";
        continue;
      }
      Param param;
      param.name = role.name;
      param.shape.assign(shape.begin(), shape.end());
      // Matrices (weights, embeddings) decay; vectors (biases, layer-norm
      // gains and biases) do not, as in GPT-2 and Megatron-LM.
      param.decay = shape.size() >= 2;
      // The nn dialect has verified the initialiser (a normal one has
      // its std); only its presence is left to check.
      auto init = fn.getArgAttrOfType<nn::InitAttr>(i, nn::attr::kInit);
      if (!init)
        return fn.emitError()
               << "has parameter \"" << role.name << "\" (argument #" << i
               << ") with no '" << nn::attr::kInit
               << "'; expected #nn.init<normal, std = ...>, #nn.init<zeros> "
                  "or #nn.init<ones>";
      param.init = manifestInitKind(init.getKind());
      if (std::optional<double> std = init.getStdDev())
        param.std = *std;
      params.push_back(std::move(param));
    }
  }
  return params;
}

LogicalResult manifest::readModel(func::FuncOp model, Manifest &manifest) {
  // The nn dialect has verified the configuration's fields.
  auto info = model->getAttrOfType<nn::ModelAttr>(nn::attr::kModel);
  if (!info)
    return model.emitError()
           << "has no '" << nn::attr::kModel
           << "'; expected the model's configuration as bitpipe-import "
              "writes it";
  manifest.modelName = model.getSymName().str();
  manifest.family = info.getFamily().str();
  manifest.vocab = info.getVocab();
  manifest.seqLen = info.getSeqLen();
  manifest.microbatchSize = info.getMicrobatchSize();
  manifest.heads = info.getHeads();
  manifest.maxPositions = info.getMaxPositions();
  manifest.normPosition = info.getNormPosition() == nn::NormPosition::Post
                              ? BP_NORM_POSITION_POST
                              : BP_NORM_POSITION_PRE;
  // For a Hugging Face config.json (docs/huggingface.md): bitpipe-import
  // gives every norm of a model one epsilon, every rotary op one base and
  // every GELU one form. The ops are in the stage functions by now, not in
  // the model function.
  bool mixedGelu = false;
  model->getParentOfType<mlir::ModuleOp>().walk([&](Operation *op) {
    if (auto gelu = dyn_cast<nn::GeluOp>(op)) {
      bp_gelu_form form = gelu.getForm() == nn::GeluForm::Erf
                              ? BP_GELU_FORM_ERF
                              : BP_GELU_FORM_TANH;
      mixedGelu |= manifest.gelu && *manifest.gelu != form;
      manifest.gelu = form;
    }
    if (auto ln = dyn_cast<nn::LayerNormOp>(op); ln && !manifest.normEpsilon)
      manifest.normEpsilon = ln.getEpsilon().convertToDouble();
    if (auto rms = dyn_cast<nn::RMSNormOp>(op); rms && !manifest.normEpsilon)
      manifest.normEpsilon = rms.getEpsilon().convertToDouble();
    if (auto rot = dyn_cast<nn::RotaryOp>(op); rot && !manifest.ropeTheta)
      manifest.ropeTheta = rot.getBase().convertToDouble();
  });
  if (mixedGelu)
    manifest.gelu.reset();
  return success();
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {

/// The manifest's keys, as bitpipe/abi/ManifestKeys.def spells them.
namespace key {
#define BP_MANIFEST_KEY(id, text) constexpr llvm::StringLiteral id(text);
#include "bitpipe/abi/ManifestKeys.def"
} // namespace key

void writeRole(llvm::json::OStream &j, const Role &role) {
  j.object([&] {
    StringRef name = bp_role_kind_names[role.kind];
    j.attribute(key::Role, name);
    // A parameter's or an input's name is under the role's own word.
    if (role.kind == BP_ROLE_PARAM || role.kind == BP_ROLE_INPUT)
      j.attribute(name, role.name);
    else if (role.index >= 0)
      j.attribute(key::Index, role.index);
    j.attributeArray(key::Shape, [&] {
      for (int64_t d : role.type.getShape())
        j.value(d);
    });
    j.attribute(key::Dtype, bp_dtype_names[role.dtype]);
  });
}

void writeNames(llvm::json::OStream &j, StringRef key,
                ArrayRef<std::string> names) {
  j.attributeArray(key, [&] {
    for (const std::string &name : names)
      j.value(name);
  });
}

} // namespace

std::string manifest::writeManifest(const Manifest &m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute(key::Version, BP_MANIFEST_VERSION);
    j.attributeObject(key::Target, [&] {
      j.attribute(key::Name, stringifyTargetKind(m.target));
      j.attribute(key::Precision, stringifyPrecision(m.precision));
    });
    j.attributeObject(key::Model, [&] {
      j.attribute(key::Name, m.modelName);
      j.attribute(key::Family, m.family);
      j.attribute(key::Vocab, m.vocab);
      j.attribute(key::SeqLen, m.seqLen);
      j.attribute(key::MicrobatchSize, m.microbatchSize);
      // The last token id, as BERT-style masked LM training uses it.
      j.attribute(key::MaskToken, m.vocab - 1);
      j.attribute(key::Heads, m.heads);
      j.attribute(key::MaxPositions, m.maxPositions);
      if (m.normEpsilon)
        j.attribute(key::NormEpsilon, *m.normEpsilon);
      if (m.ropeTheta)
        j.attribute(key::RopeTheta, *m.ropeTheta);
      if (m.gelu)
        j.attribute(key::Gelu, bp_gelu_form_names[*m.gelu]);
      j.attribute(key::NormPosition, bp_norm_position_names[m.normPosition]);
    });
    j.attributeObject(key::Schedule, [&] {
      j.attribute(key::Name, m.scheduleName);
      j.attribute(key::Microbatches, m.microbatches);
      j.attribute(key::Devices, m.devices);
      j.attribute(key::DataParallel, m.dataParallel);
      j.attribute(key::WorldSize, m.worldSize);
      j.attribute(key::TransferStreams,
                  bp_transfer_streams_names[m.transferStreams]);
      j.attributeArray(key::Channels, [&] {
        for (auto [src, dst] : m.channels)
          j.array([&] {
            j.value(src);
            j.value(dst);
          });
      });
    });
    j.attributeArray(key::Params, [&] {
      for (const Param &p : m.params)
        j.object([&] {
          j.attribute(key::Name, p.name);
          j.attributeArray(key::Shape, [&] {
            for (int64_t d : p.shape)
              j.value(d);
          });
          j.attributeObject(key::Init, [&] {
            j.attribute(key::Kind, bp_init_kind_names[p.init]);
            if (p.init == BP_INIT_NORMAL)
              j.attribute(key::Std, p.std);
          });
          j.attribute(key::Decay, p.decay);
        });
    });
    j.attributeArray(key::Functions, [&] {
      for (const Function &f : m.functions)
        j.object([&] {
          j.attribute(key::Name, func::FuncOp(f.fn).getSymName());
          j.attribute(key::Kind, stringifyFunctionKind(f.kind));
          j.attribute(key::Stage, f.stage);
          j.attributeArray(key::Args, [&] {
            for (const Role &role : f.args)
              writeRole(j, role);
          });
          j.attributeArray(key::Results, [&] {
            for (const Role &role : f.results)
              writeRole(j, role);
          });
        });
    });
    j.attributeArray(key::Groups, [&] {
      for (const auto &group : m.groups)
        j.array([&] {
          for (int64_t rank : group)
            j.value(rank);
        });
    });
    j.attributeArray(key::Ranks, [&] {
      for (const Rank &r : m.ranks)
        j.object([&] {
          j.attribute(key::NumValues, r.numValues);
          j.attribute(key::PeakHandles, r.peakHandles);
          j.attribute(key::PeakSavedBytes, r.peakSavedBytes);
          writeNames(j, key::Params, r.params);
          j.attributeArray(key::Buckets, [&] {
            for (const Bucket &b : r.buckets)
              j.object([&] {
                j.attribute(key::Group, b.group);
                writeNames(j, key::Params, b.grads);
              });
          });
        });
    });
  });
  return text;
}
