//===- CodeGeneration.cpp - LLVM IR to object code for bitpipe-compile ----===//

#include "CodeGeneration.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

#include <algorithm>

using namespace llvm;

namespace bitpipe::compile {

std::unique_ptr<TargetMachine> createHostTargetMachine(unsigned optLevel,
                                                       std::string &error) {
  std::string triple = sys::getProcessTriple();
  const Target *theTarget = TargetRegistry::lookupTarget(triple, error);
  if (!theTarget)
    return nullptr;
  SubtargetFeatures features;
  for (const auto &[feature, enabled] : sys::getHostCPUFeatures())
    features.AddFeature(feature, enabled);
  static const CodeGenOptLevel kLevels[] = {
      CodeGenOptLevel::None, CodeGenOptLevel::Less, CodeGenOptLevel::Default,
      CodeGenOptLevel::Aggressive};
  return std::unique_ptr<TargetMachine>(theTarget->createTargetMachine(
      triple, sys::getHostCPUName(), features.getString(), TargetOptions(),
      Reloc::PIC_, std::nullopt, kLevels[std::min(optLevel, 3u)]));
}

// The loop and SLP vectorisers are on, as MLIR's makeOptimizingTransformer
// sets them. At -O1 and above, LLVM's MergeFunctions runs first: the stage
// functions of a model's middle layers differ only in which buffers they are
// given (the parameters are arguments), so a 126-layer model on 128 stages
// has a handful of distinct ones, and the rest become calls of those. The
// OptNone instrumentation is what makes the new pass manager skip `optnone`
// functions (MLIR's transformer does not register it, so the rank functions
// were optimised, their loops unrolled, at a third of the compile's time;
// bench/results-log.md, "Compiler cost at scale, fourth slice").
void optimizeModule(Module &module, TargetMachine &machine, unsigned optLevel) {
  PassInstrumentationCallbacks instrumentation;
  OptNoneInstrumentation optNone(/*DebugLogging=*/false);
  optNone.registerCallbacks(instrumentation);
  PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  PassBuilder builder(&machine, tuning, std::nullopt, &instrumentation);
  LoopAnalysisManager loops;
  FunctionAnalysisManager functions;
  CGSCCAnalysisManager cgscc;
  ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  static const OptimizationLevel kLevels[] = {
      OptimizationLevel::O0, OptimizationLevel::O1, OptimizationLevel::O2,
      OptimizationLevel::O3};
  OptimizationLevel level = kLevels[std::min(optLevel, 3u)];
  ModulePassManager pm;
  if (level == OptimizationLevel::O0) {
    pm.addPass(builder.buildO0DefaultPipeline(level));
  } else {
    pm.addPass(MergeFunctionsPass());
    pm.addPass(builder.buildPerModuleDefaultPipeline(level));
  }
  pm.run(module, modules);
}

namespace {

bool isRankFunction(mlir::LLVM::LLVMFuncOp fn) {
  if (fn.isExternal())
    return false;
  std::optional<mlir::ArrayAttr> passthrough = fn.getPassthrough();
  return passthrough &&
         llvm::any_of(*passthrough, [](mlir::Attribute a) {
           auto name = llvm::dyn_cast<mlir::StringAttr>(a);
           return name && name.getValue() == "optnone";
         });
}

bool isLocal(mlir::LLVM::Linkage linkage) {
  return linkage == mlir::LLVM::Linkage::Internal ||
         linkage == mlir::LLVM::Linkage::Private;
}

/// The symbols \p fn calls or takes the address of.
llvm::SetVector<llvm::StringRef> referencedSymbols(mlir::LLVM::LLVMFuncOp fn) {
  llvm::SetVector<llvm::StringRef> names;
  fn.walk([&](mlir::Operation *op) {
    if (auto call = llvm::dyn_cast<mlir::LLVM::CallOp>(op)) {
      if (std::optional<llvm::StringRef> callee = call.getCallee())
        names.insert(*callee);
    } else if (auto address = llvm::dyn_cast<mlir::LLVM::AddressOfOp>(op)) {
      names.insert(address.getGlobalName());
    }
  });
  return names;
}

Expected<SmallVector<char, 0>> generate(Module &module,
                                        TargetMachine &machine) {
  SmallVector<char, 0> object;
  raw_svector_ostream stream(object);
  legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, stream, nullptr,
                                  CodeGenFileType::ObjectFile))
    return createStringError(inconvertibleErrorCode(),
                             "this target cannot emit object files");
  codegen.run(module);
  return object;
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> splitOffRankFunctions(mlir::ModuleOp module,
                                                        unsigned optLevel) {
  if (optLevel == 0)
    return {};
  mlir::SymbolTable symbols(module);
  SmallVector<mlir::LLVM::LLVMFuncOp> ranks;
  llvm::SetVector<llvm::StringRef> used;
  for (auto fn : module.getOps<mlir::LLVM::LLVMFuncOp>()) {
    if (!isRankFunction(fn))
      continue;
    if (isLocal(fn.getLinkage()))
      return {};
    ranks.push_back(fn);
    llvm::SetVector<llvm::StringRef> names = referencedSymbols(fn);
    used.insert(names.begin(), names.end());
  }
  if (ranks.empty())
    return {};
  // What the rank functions use, declared in their module: functions and
  // globals of external linkage only (nothing moves otherwise).
  for (llvm::StringRef name : used) {
    mlir::Operation *def = symbols.lookup(name);
    auto fn = llvm::dyn_cast_or_null<mlir::LLVM::LLVMFuncOp>(def);
    auto global = llvm::dyn_cast_or_null<mlir::LLVM::GlobalOp>(def);
    if ((!fn && !global) || (fn && isLocal(fn.getLinkage())) ||
        (global && isLocal(global.getLinkage())))
      return {};
  }

  auto part = mlir::ModuleOp::create(module.getLoc());
  // The data layout and target triple, and whatever else the module says.
  part->setAttrs(module->getAttrDictionary());
  mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(part.getBody());
  for (llvm::StringRef name : used) {
    if (llvm::is_contained(ranks, symbols.lookup(name)))
      continue; // moved below
    mlir::Operation *def = symbols.lookup(name);
    if (auto fn = llvm::dyn_cast<mlir::LLVM::LLVMFuncOp>(def))
      b.create<mlir::LLVM::LLVMFuncOp>(fn.getLoc(), fn.getName(),
                                       fn.getFunctionType());
    else if (auto global = llvm::dyn_cast<mlir::LLVM::GlobalOp>(def))
      b.create<mlir::LLVM::GlobalOp>(global.getLoc(), global.getGlobalType(),
                                     global.getConstant(),
                                     mlir::LLVM::Linkage::External,
                                     global.getSymName(), mlir::Attribute());
  }
  // Each rank function moves whole (no copy of its body); a declaration
  // takes its place.
  for (mlir::LLVM::LLVMFuncOp fn : ranks) {
    mlir::Operation *next = fn->getNextNode();
    fn->moveBefore(part.getBody(), part.getBody()->end());
    mlir::OpBuilder here = next ? mlir::OpBuilder(next)
                                : mlir::OpBuilder::atBlockEnd(module.getBody());
    here.create<mlir::LLVM::LLVMFuncOp>(fn.getLoc(), fn.getName(),
                                        fn.getFunctionType(),
                                        fn.getLinkage());
  }
  return part;
}

Expected<SmallVector<char, 0>> compileToObject(mlir::ModuleOp module,
                                               unsigned optLevel,
                                               StringRef name,
                                               mlir::TimingScope &timing) {
  std::string error;
  std::unique_ptr<TargetMachine> machine =
      createHostTargetMachine(optLevel, error);
  if (!machine)
    return createStringError(inconvertibleErrorCode(),
                             "no code generator for this host: " + error);
  LLVMContext context;
  mlir::TimingScope translating = timing.nest("Translate to LLVM IR");
  std::unique_ptr<Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, name);
  if (!llvmModule)
    return createStringError(inconvertibleErrorCode(),
                             name + ": translation to LLVM IR failed");
  translating.stop();
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple().str());
  if (optLevel > 0) {
    mlir::TimingScope optimizing = timing.nest("Optimise LLVM IR");
    optimizeModule(*llvmModule, *machine, optLevel);
  }
  mlir::TimingScope generating = timing.nest("Generate object code");
  return generate(*llvmModule, *machine);
}

} // namespace bitpipe::compile
