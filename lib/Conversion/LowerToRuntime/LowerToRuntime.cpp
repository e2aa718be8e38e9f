//===- LowerToRuntime.cpp - Tensor-level programs to the LLVM dialect -----===//
//
// `bitpipe-lower-to-runtime`: the whole way from bitpipe-pipeline's output
// to an LLVM-dialect module that defines what program.h promises. Its first
// pass, bitpipe-lower-program-to-runtime, runs bitpipe-verify's check before
// it changes anything (verifyRankPrograms), so that no per-rank programs the
// verifier rejects become an executable, however the lowering is invoked.
// The programs go first, while the stage functions are still on tensors and
// carry their role attributes; the entries last, once the C signatures of
// the stage functions are final.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"

#include "bitpipe/Conversion/Passes.h"
#include "bitpipe/Support/PassOptionNames.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

/// The pipeline's textual options: the passes' own, under the same names.
struct LowerToRuntimePipelineOptions
    : PassPipelineOptions<LowerToRuntimePipelineOptions> {
  Option<bitpipe::TargetKind> target{
      *this, "target", llvm::cl::desc("The runtime linked (cpu | cuda)"),
      llvm::cl::init(bitpipe::TargetKind::CPU), bitpipe::targetKindValues()};
  Option<bitpipe::Precision> precision{
      *this, "precision",
      llvm::cl::desc("fp32 | bf16 (bf16 needs target=cuda)"),
      llvm::cl::init(bitpipe::Precision::FP32), bitpipe::precisionValues()};
  Option<bool> loops{*this, "loops",
                     llvm::cl::desc("Repeated runs of a rank's calls as "
                                    "scf.for loops (false: a straight line)"),
                     llvm::cl::init(true)};
  Option<bool> ncclRules{
      *this, "nccl-rules",
      llvm::cl::desc("Check a CPU program under NCCL's rules too"),
      llvm::cl::init(false)};
};

} // namespace

void bitpipe::buildLowerToRuntimePipeline(
    OpPassManager &pm, const LowerToRuntimeOptions &options) {
  LowerProgramToRuntimeOptions program;
  program.target = options.target;
  program.precision = options.precision;
  program.loops = options.loops;
  program.ncclRules = options.ncclRules;
  pm.addPass(createLowerProgramToRuntime(program));
  LowerNNToRuntimeOptions kernels;
  kernels.target = options.target;
  kernels.precision = options.precision;
  pm.addPass(createLowerNNToRuntime(kernels));
  buildLowerToLLVMPipeline(pm);
  pm.addPass(createEmitEntryPoints());
}

std::vector<std::string> bitpipe::lowerToRuntimePipelineOptionNames() {
  return optionNamesOf<LowerToRuntimePipelineOptions>();
}

void bitpipe::registerLowerToRuntimePipeline() {
  PassPipelineRegistration<LowerToRuntimePipelineOptions>(
      "bitpipe-lower-to-runtime",
      "Lower the output of bitpipe-pipeline to the LLVM dialect: rank "
      "programs as calls of bitpipe/program.h, stage functions as calls of "
      "the kernels, the manifest and the entry tables",
      [](OpPassManager &pm, const LowerToRuntimePipelineOptions &options) {
        buildLowerToRuntimePipeline(pm, {options.target, options.precision,
                                         options.loops, options.ncclRules});
      });
}
