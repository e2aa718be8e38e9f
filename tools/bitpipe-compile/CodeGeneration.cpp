//===- CodeGeneration.cpp - LLVM IR to object code for bitpipe-compile ----===//

#include "CodeGeneration.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/InstIterator.h"
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
#include "llvm/Transforms/Utils/Cloning.h"

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
// bench/RESULTS.md, issue 15).
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

/// Whether \p fn refers to a symbol of local linkage, which another object
/// could not name.
bool refersToLocalSymbol(const Function &fn) {
  SmallVector<const Constant *> work;
  SmallPtrSet<const Constant *, 32> seen;
  for (const Instruction &inst : instructions(fn))
    for (const Use &use : inst.operands())
      if (auto *c = dyn_cast<Constant>(use.get()))
        work.push_back(c);
  while (!work.empty()) {
    const Constant *c = work.pop_back_val();
    if (!seen.insert(c).second)
      continue;
    if (auto *gv = dyn_cast<GlobalValue>(c)) {
      if (gv->hasLocalLinkage())
        return true;
      continue;
    }
    for (const Use &use : c->operands())
      if (auto *operand = dyn_cast<Constant>(use.get()))
        work.push_back(operand);
  }
  return false;
}

/// Moves the bodies of \p module's `optnone` functions into a module of
/// their own, leaving declarations; null when there are none, or when one
/// has local linkage or refers to a local symbol, or the module has an
/// appending global (then nothing moves).
std::unique_ptr<Module> splitOptNoneFunctions(Module &module) {
  // An appending global (llvm.global_ctors and the like) cannot be left as
  // a declaration in the other module; the lowering makes none, and a
  // module that has one is generated whole.
  for (const GlobalVariable &global : module.globals())
    if (global.hasAppendingLinkage())
      return nullptr;
  SmallPtrSet<const GlobalValue *, 16> moved;
  for (Function &fn : module) {
    if (fn.isDeclaration() || !fn.hasOptNone())
      continue;
    if (fn.hasLocalLinkage() || refersToLocalSymbol(fn))
      return nullptr;
    moved.insert(&fn);
  }
  if (moved.empty())
    return nullptr;
  ValueToValueMapTy map;
  std::unique_ptr<Module> part = CloneModule(
      module, map, [&](const GlobalValue *gv) { return moved.contains(gv); });
  // The clone defines only the moved functions and declares what they use;
  // the original keeps declarations of them (the rank table refers to
  // them), which the link resolves to the clone's definitions.
  for (Function &fn : module)
    if (moved.contains(&fn))
      fn.deleteBody();
  return part;
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

CodeGenerationUnits splitForCodeGeneration(std::unique_ptr<Module> module,
                                           unsigned optLevel) {
  CodeGenerationUnits units;
  if (optLevel > 0)
    units.optNone = splitOptNoneFunctions(*module);
  units.rest = std::move(module);
  return units;
}

Expected<std::vector<SmallVector<char, 0>>>
generateObjects(CodeGenerationUnits units, TargetMachine &machine) {
  std::vector<SmallVector<char, 0>> objects;
  if (units.optNone) {
    units.optNone->setDataLayout(units.rest->getDataLayout());
    units.optNone->setTargetTriple(units.rest->getTargetTriple());
    std::string error;
    std::unique_ptr<TargetMachine> fast = createHostTargetMachine(0, error);
    if (!fast)
      return createStringError(inconvertibleErrorCode(), error);
    Expected<SmallVector<char, 0>> object = generate(*units.optNone, *fast);
    if (!object)
      return object.takeError();
    objects.push_back(std::move(*object));
  }
  Expected<SmallVector<char, 0>> object = generate(*units.rest, machine);
  if (!object)
    return object.takeError();
  objects.push_back(std::move(*object));
  return objects;
}

} // namespace bitpipe::compile
