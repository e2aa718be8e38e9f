//===- ModelTestUtil.h - A tiny GPT, its data and its reference -*- C++ -*-===//
//
// What the tests that JIT-run lowered models share: the model, seeded
// parameters and data, the float64 interpretation of the unpartitioned
// model IR (ops from runtime/unittests/Reference.h, not the kernels), and
// the registration, pipeline and symbol boilerplate of compiling it.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_UNITTESTS_CONVERSION_MODELTESTUTIL_H
#define BITPIPE_UNITTESTS_CONVERSION_MODELTESTUTIL_H

#include "Reference.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace bitpipe::test {

using namespace mlir;

//===----------------------------------------------------------------------===//
// The model and its data
//===----------------------------------------------------------------------===//

inline ModelConfig tinyGpt() {
  ModelConfig c;
  c.name = "gpt";
  c.family = ModelFamily::GPT;
  c.layers = 2;
  c.hidden = 16;
  c.heads = 2;
  c.vocab = 32;
  c.maxPositions = 8;
  c.seqLen = 8;
  c.microbatchSize = 2;
  return c;
}

/// Parameters (by `nn.param` name, initialised per `nn.init` from a seeded
/// generator) and one micro-batch (by `nn.input` name). Another seed gives
/// other parameters and another micro-batch.
struct Data {
  std::map<std::string, std::vector<float>> params;
  std::map<std::string, std::vector<int32_t>> inputs;
};

inline func::FuncOp modelFunction(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr(nn::attr::kModel))
      return fn;
  return {};
}

inline Data makeData(ModuleOp module, const ModelConfig &config,
                     unsigned seed = 1234) {
  Data d;
  std::mt19937 gen(seed);
  func::FuncOp model = modelFunction(module);
  for (BlockArgument arg : model.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    unsigned n = arg.getArgNumber();
    if (auto name = model.getArgAttrOfType<StringAttr>(n, nn::attr::kParam)) {
      auto init = model.getArgAttrOfType<nn::InitAttr>(n, nn::attr::kInit);
      std::vector<float> v(type.getNumElements(), 0.0f);
      if (init.getKind() == nn::InitKind::Normal) {
        std::normal_distribution<float> normal(0.0f, *init.getStdDev());
        for (float &x : v)
          x = normal(gen);
      } else if (init.getKind() == nn::InitKind::Ones) {
        std::fill(v.begin(), v.end(), 1.0f);
      }
      d.params[name.str()] = std::move(v);
    } else if (auto name =
                   model.getArgAttrOfType<StringAttr>(n, nn::attr::kInput)) {
      std::uniform_int_distribution<int32_t> id(0, config.vocab - 1);
      std::vector<int32_t> v(type.getNumElements());
      for (int32_t &x : v)
        x = id(gen);
      d.inputs[name.str()] = std::move(v);
    }
  }
  return d;
}

//===----------------------------------------------------------------------===//
// The float64 reference: the unpartitioned model IR, interpreted
//===----------------------------------------------------------------------===//

inline int64_t lastDim(Value v) {
  auto t = cast<ShapedType>(v.getType());
  return t.getDimSize(t.getRank() - 1);
}
inline int64_t rowsOf(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements() / lastDim(v);
}

/// The loss of the model function of \p module in double, with parameter
/// \p perturbName[perturbIndex] shifted by \p delta (for finite differences).
inline double referenceLoss(ModuleOp module, const Data &data,
                            const std::string &perturbName = "",
                            int64_t perturbIndex = 0, double delta = 0.0) {
  namespace ref = bitpipe::runtime::ref;
  func::FuncOp model = modelFunction(module);
  llvm::DenseMap<Value, std::vector<double>> f;
  llvm::DenseMap<Value, std::vector<int32_t>> ids;
  for (BlockArgument arg : model.getArguments()) {
    unsigned n = arg.getArgNumber();
    if (auto name = model.getArgAttrOfType<StringAttr>(n, nn::attr::kParam)) {
      const std::vector<float> &p = data.params.at(name.str());
      std::vector<double> v(p.begin(), p.end());
      if (name.getValue() == perturbName)
        v[perturbIndex] += delta;
      f[arg] = std::move(v);
    } else {
      ids[arg] = data.inputs.at(
          model.getArgAttrOfType<StringAttr>(n, nn::attr::kInput).str());
    }
  }
  double loss = NAN;
  for (Operation &op : model.getBody().front()) {
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](nn::EmbeddingOp o) {
          auto tok = cast<ShapedType>(o.getTokens().getType());
          f[o] = ref::embedding(ids[o.getTokens()], f[o.getWte()],
                                f[o.getWpe()], tok.getDimSize(0),
                                tok.getDimSize(1), lastDim(o.getWte()));
        })
        .Case([&](nn::LayerNormOp o) {
          f[o.getResult()] =
              ref::layerNorm(f[o.getInput()], f[o.getGamma()], f[o.getBeta()],
                             rowsOf(o.getInput()), lastDim(o.getInput()),
                             double(o.getEpsilon().convertToFloat()));
        })
        .Case([&](nn::LinearOp o) {
          f[o] =
              ref::linear(f[o.getInput()], f[o.getWeight()],
                          o.getBias() ? f[o.getBias()] : std::vector<double>{},
                          rowsOf(o.getInput()), lastDim(o.getInput()),
                          lastDim(o.getResult()));
        })
        .Case([&](nn::AttentionOp o) {
          auto t = cast<ShapedType>(o.getQkv().getType());
          f[o.getResult()] = ref::attention(
              f[o.getQkv()], t.getDimSize(0), t.getDimSize(1),
              lastDim(o.getResult()), int64_t(o.getNumHeads()), o.getCausal());
        })
        .Case([&](nn::GeluOp o) { f[o] = ref::gelu(f[o.getInput()]); })
        .Case(
            [&](nn::AddOp o) { f[o] = ref::add(f[o.getLhs()], f[o.getRhs()]); })
        .Case([&](nn::CrossEntropyOp o) {
          f[o.getLoss()] = {
              ref::crossEntropy(f[o.getLogits()], ids[o.getLabels()],
                                rowsOf(o.getLogits()), lastDim(o.getLogits()),
                                int32_t(o.getIgnoreIndexAttr().getInt()))};
        })
        .Case([&](func::ReturnOp o) { loss = f[o.getOperand(0)][0]; })
        .Default([&](Operation *o) {
          ADD_FAILURE() << "reference: unexpected op "
                        << o->getName().getStringRef().str();
        });
  }
  return loss;
}

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

inline void registerEverything(MLIRContext &ctx) {
  DialectRegistry registry;
  registry.insert<nn::NNDialect, bp::BitPipeDialect, arith::ArithDialect,
                  func::FuncDialect, LLVM::LLVMDialect, memref::MemRefDialect,
                  tensor::TensorDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

/// Runs \p pipeline (passes on the module, as on bitpipe-opt's command line).
inline LogicalResult runPipeline(ModuleOp module, StringRef pipeline) {
  PassManager pm(module.getContext());
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(pipeline, pm, os))) {
    ADD_FAILURE() << "bad pipeline '" << pipeline.str() << "': " << errors;
    return failure();
  }
  return pm.run(module);
}

// MLIR's generic allocation functions, defined on the runtime's pool
// (runtime/lib/cpu/HostMemory.cpp); the memref lowering calls them.
extern "C" {
void *_mlir_memref_to_llvm_alloc(size_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes);
void _mlir_memref_to_llvm_free(void *ptr);
}

/// The kernels the generated code calls, for the JIT's symbol table (the
/// test binary does not export them dynamically).
inline llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const char *name, auto *fn) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                           llvm::JITSymbolFlags::Exported};
  };
  // Every function of runtime.h the CPU library defines, from the tables
  // the compiler calls them by: the fp32 kernels, the float64-accumulator
  // forms of the gradient kernels and the support functions.
#define BP_ADD_KERNEL_(kernel) add("bp_" #kernel, &bp_##kernel);
  BP_KERNELS(BP_ADD_KERNEL_)
#undef BP_ADD_KERNEL_
#define BP_ADD_GRAD_KERNEL_(kernel)                                            \
  add("bp_" #kernel "_g64", &bp_##kernel##_g64);
  BP_GRAD_KERNELS(BP_ADD_GRAD_KERNEL_)
#undef BP_ADD_GRAD_KERNEL_
#define BP_SUPPORT_FN(symbol, ...) add(#symbol, &symbol);
#include "bitpipe/abi/Support.def"
  // The generic allocation functions of the memref lowering (HostMemory.cpp).
  add("_mlir_memref_to_llvm_alloc", &_mlir_memref_to_llvm_alloc);
  add("_mlir_memref_to_llvm_aligned_alloc",
      &_mlir_memref_to_llvm_aligned_alloc);
  add("_mlir_memref_to_llvm_free", &_mlir_memref_to_llvm_free);
  return map;
}

} // namespace bitpipe::test

#endif // BITPIPE_UNITTESTS_CONVERSION_MODELTESTUTIL_H
