//===- bitpipe-compile.cpp - Model in, training executable out ------------===//
//
//   bitpipe-compile MODEL.mlir|CONFIG.json --devices D --schedule S
//                   [--seq-len T] [--microbatch-size B] (a CONFIG's sizes)
//                   [--microbatches N] [--dp K] [--emit=mlir|llvm|obj|exe]
//                   [--target cpu|cuda] [--precision fp32|bf16]
//                   [--transfer-streams channel|shared] [--nccl-rules]
//                   [--loops=false] [--verify-each] [--mlir-timing]
//                   [-o OUT]
//
// The driver runs, in one process, what a user could also run step by step:
//
//   bitpipe-import (when given a JSON config)
//   bitpipe-opt --bitpipe-pipeline=...          (schedule, transfers, buckets)
//   bitpipe-opt --bitpipe-lower-to-runtime{target=T precision=P loops=L}
//                                               (runtime calls, LLVM dialect)
//   mlir-translate --mlir-to-llvmir, opt -O2, llc -filetype=obj
//                         (the rank functions at -O0, in a thread of their
//                          own: CodeGeneration.h)
//   c++ OBJ... @runtime-cpu.rsp | @runtime-cuda.rsp  (link with the runtime)
//
// The target only chooses the runtime library linked and what the manifest
// records: the stage functions call the same kernel ABI (runtime.h) on both.
// The precision (bf16 by default on cuda, fp32 on cpu, which has fp32
// kernels only) decides the stage functions' buffer types
// (docs/architecture.md, "Targets and precision").
//
// Verification, as a C++ compiler does it: the input and the lowered module
// (before it is translated to LLVM IR) are verified whole; between the
// passes only with --verify-each, a debugging aid that costs about a quarter
// of a large compile. bitpipe's own checks of the programs (bitpipe-verify's,
// run by the lowering) run either way.
//
// --mlir-timing prints, at the end, the time of every pass and of each phase
// after them (printing the MLIR, translation to LLVM IR, LLVM's optimiser,
// code generation, the link), so a slow compile says where its time went.
//
// and writes the output of the stage that --emit names, as every tool writes
// (ToolOutput.h, docs/files.md): to a temporary file renamed over the output
// once complete (the linker writes the executable's), so a failed run (a
// full disk, a failed link, a signal) leaves the previous output as it was;
// "-" and devices are written into; a directory or a symbolic link is
// refused before compiling.
//
//===----------------------------------------------------------------------===//

#include "Emit.h"
#include "ModelInput.h"
#include "ToolOutput.h"
#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"
#include "bitpipe/Conversion/Target/Target.h"
#include "bitpipe/InitAllDialects.h"
#include "bitpipe/Support/PartitionUnitsOptions.h"
#include "bitpipe/Support/ScheduleCommandLine.h"
#include "bitpipe/Support/TransportOptions.h"
#include "bitpipe/Transforms/Pipeline.h"
#include "bitpipe/base/MemoryReuse.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>

using namespace llvm;

namespace {

enum class EmitKind { MLIR, LLVM, Object, Executable };

cl::OptionCategory category("bitpipe-compile options");

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.mlir | config.json>"),
                               cl::cat(category));
// As bitpipe-import's: a configuration's sizes, given on the command line
// (a Hugging Face config.json has neither).
cl::opt<int64_t> seqLen("seq-len",
                        cl::desc("Tokens per sample, for a configuration "
                                 "(overrides its seq_len; default: the "
                                 "file's, or a Hugging Face config's "
                                 "max_position_embeddings)"),
                        cl::init(0), cl::cat(category));
cl::opt<int64_t> microbatchSize(
    "microbatch-size",
    cl::desc("Samples per micro-batch, for a configuration (overrides its "
             "microbatch_size; default: the file's, or 1 for a Hugging Face "
             "config)"),
    cl::init(0), cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file (default: the "
                                              "input's name, with .mlir, .ll, "
                                              ".o or no extension)"),
                                cl::value_desc("file"), cl::cat(category));
cl::opt<EmitKind> emit(
    "emit", cl::desc("What to write"), cl::init(EmitKind::Executable),
    cl::values(
        clEnumValN(EmitKind::MLIR, "mlir",
                   "the program lowered to runtime calls (LLVM dialect)"),
        clEnumValN(EmitKind::LLVM, "llvm", "LLVM IR, optimised"),
        clEnumValN(EmitKind::Object, "obj", "an object file"),
        clEnumValN(EmitKind::Executable, "exe",
                   "an executable linked with the runtime (default)")),
    cl::cat(category));
cl::opt<bitpipe::TargetKind> target("target",
                                    cl::desc("What the executable runs on "
                                             "(default: cpu)"),
                                    cl::init(bitpipe::TargetKind::CPU),
                                    bitpipe::targetKindValues(),
                                    cl::cat(category));
cl::opt<bitpipe::Precision>
    precision("precision",
              cl::desc("Training precision (default: bf16 with --target "
                       "cuda, fp32 with --target cpu)"),
              bitpipe::precisionValues(), cl::cat(category));

// The schedule: the options of --bitpipe-pipeline, under the same names,
// read into its PipelineConfig (pipelineConfig()); the schedule registry
// checks them and fills what is not given.
// BitPipe on its smallest depth, 2 (it pairs device r with D-1-r): a
// default that is itself a valid request.
bitpipe::ScheduleCommandLine scheduleFlags(category, {"bitpipe", 2});
cl::opt<double> bucketMb("bucket-mb",
                         cl::desc("Gradient bucket capacity in MiB (25), in "
                                  "(0, 1048576]"),
                         cl::init(25.0), cl::cat(category));
cl::opt<bool> splitBackward("split-backward",
                            cl::desc("Split every backward into input and "
                                     "weight gradients (zb-h1 only, which "
                                     "splits without it)"),
                            cl::init(false), cl::cat(category));
cl::opt<bitpipe::sched::Recompute> recompute(
    "recompute",
    cl::desc("What each stage's backward computes again (default: none, "
             "keep every value it reads; docs/recompute.md)"),
    cl::init(bitpipe::sched::Recompute::None), bitpipe::recomputeValues(),
    cl::cat(category));
cl::opt<bitpipe::sched::PartitionUnits> units(
    "units",
    cl::desc("The units stages are cut from: whole layers (default) or each "
             "layer's attention and MLP halves (docs/models.md, \"Partition "
             "units\"); a configuration's only"),
    cl::init(bitpipe::sched::PartitionUnits::Layers),
    bitpipe::partitionUnitsValues(), cl::cat(category));
cl::opt<bitpipe::sched::TransferStreams> transferStreams(
    "transfer-streams",
    cl::desc("How the CUDA runtime lays the transfers on NCCL communicators "
             "and streams (default: channel; docs/nccl-transfers.md)"),
    cl::init(bitpipe::sched::TransferStreams::Channel),
    bitpipe::transferStreamsValues(), cl::cat(category));
cl::opt<bitpipe::sched::GradientSync> gradientSync(
    "gradient-sync",
    cl::desc("How a stage held by several pipeline ranks (BitPipe's and "
             "Chimera's mirror pairs) sums its gradients across the "
             "data-parallel copies (default: hierarchical; "
             "docs/data-parallel.md, \"Two levels\")"),
    cl::init(bitpipe::sched::GradientSync::Hierarchical),
    bitpipe::gradientSyncValues(), cl::cat(category));
cl::opt<bool> ncclRules("nccl-rules",
                        cl::desc("Check a --target cpu program under NCCL's "
                                 "rules too (--target cuda always is): for "
                                 "an executable linked with the NCCL "
                                 "communicator (--runtime-link)"),
                        cl::init(false), cl::cat(category));

// Code generation and linking.
cl::opt<bool> loops("loops",
                    cl::desc("Emit the repeated steady state of each rank "
                             "as loops (default), so that the program does "
                             "not grow with --microbatches; --loops=false "
                             "keeps one call per step (docs/repetition.md)"),
                    cl::init(true), cl::cat(category));
cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every pass (default: the input and the "
             "lowered module only)"),
    cl::init(false), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level (0-3)"),
                           cl::Prefix, cl::init(2), cl::cat(category));
cl::opt<std::string> runtimeLink(
    "runtime-link",
    cl::desc("Response file with the runtime's libraries and link flags "
             "(default: the target's, from this build)"),
    cl::cat(category));
cl::opt<std::string> linker("linker", cl::desc("The C++ compiler driver "
                                               "that links"),
                            cl::init(BITPIPE_DEFAULT_LINKER),
                            cl::cat(category));

int fail(const Twine &message) {
  WithColor::error(errs(), "bitpipe-compile") << message << "\n";
  return 1;
}

/// The numeric flags that the schedule registry does not check, in range;
/// an empty string when they are (docs/models.md, "Limits").
std::string checkNumericFlags() {
  if (!std::isfinite(bucketMb) || bucketMb <= 0 ||
      bucketMb > bitpipe::kMaxBucketMb) {
    std::string message;
    raw_string_ostream(message)
        << "--bucket-mb must be a finite number in (0, "
        << static_cast<int64_t>(bitpipe::kMaxBucketMb) << "], got "
        << format("%.15g", bucketMb.getValue());
    return message;
  }
  if (optLevel > 3)
    return "-O must be 0, 1, 2 or 3, got " + std::to_string(optLevel);
  return {};
}

/// The flags as bitpipe-pipeline's configuration: a flag not given is left
/// to the schedule registry's default.
bitpipe::PipelineConfig pipelineConfig() {
  bitpipe::PipelineConfig config;
  config.request = scheduleFlags.request();
  config.bucketMb = bucketMb;
  config.request.splitBackward = splitBackward;
  config.recompute = recompute;
  config.streams = transferStreams;
  config.gradientSync = gradientSync;
  return config;
}

std::string defaultOutput() {
  SmallString<128> path(sys::path::filename(inputPath));
  sys::path::replace_extension(path, "");
  switch (emit) {
  case EmitKind::MLIR:
    path += ".runtime.mlir";
    break;
  case EmitKind::LLVM:
    path += ".ll";
    break;
  case EmitKind::Object:
    path += ".o";
    break;
  case EmitKind::Executable:
    break;
  }
  return std::string(path);
}

/// The runtime link file of \p kind as this build wrote it, or nothing when
/// this build has no runtime for it.
std::optional<std::string> builtRuntimeLink(bitpipe::TargetKind kind) {
  if (kind == bitpipe::TargetKind::CPU)
    return std::string(BITPIPE_DEFAULT_RUNTIME_LINK);
#if BITPIPE_HAVE_CUDA_RUNTIME
  return std::string(BITPIPE_DEFAULT_RUNTIME_CUDA_LINK);
#else
  return std::nullopt;
#endif
}

/// The response file to link \p kind's executable with: --runtime-link, or
/// this build's. Fails, naming why, when this build has no runtime for
/// \p kind.
std::optional<std::string> runtimeLinkFile(bitpipe::TargetKind kind) {
  std::optional<std::string> file =
      runtimeLink.getNumOccurrences() ? std::string(runtimeLink)
                                      : builtRuntimeLink(kind);
  if (!file) {
    fail("--target " + bitpipe::stringifyTargetKind(kind) +
         ": this bitpipe-compile was built without CUDA (BITPIPE_ENABLE_CUDA "
         "off, or no CUDA toolkit found), so it has no CUDA runtime to link; "
         "rebuild it with CUDA, pass --runtime-link, or stop at --emit=obj");
    return std::nullopt;
  }
  if (!sys::fs::exists(*file)) {
    fail("runtime link file '" + *file +
         "' not found (build the runtime, or pass --runtime-link)");
    return std::nullopt;
  }
  return file;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  bitpipe::keepFreedMemoryForReuse();
  // --mlir-timing (and its display options) are MLIR's own; they stay out of
  // --help with every option not in this tool's category.
  mlir::registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "bitpipe-compile: compiles a transformer model (IR or JSON "
      "configuration) into a pipeline-parallel training executable\n");

  bitpipe::LowerToRuntimeOptions targetOptions;
  targetOptions.target = target;
  targetOptions.loops = loops;
  targetOptions.ncclRules = ncclRules;
  targetOptions.precision = precision.getNumOccurrences()
                                ? precision.getValue()
                                : bitpipe::defaultPrecision(target);
  if (!bitpipe::supportsPrecision(targetOptions.target,
                                  targetOptions.precision))
    return fail("--precision " +
                bitpipe::stringifyPrecision(targetOptions.precision) +
                " needs --target cuda; the " +
                bitpipe::stringifyTargetKind(targetOptions.target) +
                " runtime has fp32 kernels only (use --precision fp32)");
  // Before compiling: an executable needs the target's runtime.
  std::string linkFile; // Empty: no runtime to link (--emit=obj).
  if (emit == EmitKind::Executable) {
    std::optional<std::string> file = runtimeLinkFile(targetOptions.target);
    if (!file)
      return 1;
    linkFile = *file;
  }
  std::string output =
      outputPath.getNumOccurrences() ? std::string(outputPath) : defaultOutput();
  // Before compiling: where the output goes (a directory, a link...).
  const std::string outputFlag =
      outputPath.getNumOccurrences() ? "-o: " : "output: ";
  if (Error e = bitpipe::checkOutputPath(output))
    return fail(outputFlag + toString(std::move(e)));

  mlir::DialectRegistry registry;
  bitpipe::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics as "file:line:col: error: ..." with the source line; not
  // followed by a dump of the whole failing op (a model is large).
  context.printOpOnDiagnostic(false);
  SourceMgr diagnosticSources;
  mlir::SourceMgrDiagnosticHandler diagnostics(diagnosticSources, &context);

  bitpipe::ModelConfigOverrides overrides;
  // The importer checks them with the file's sizes (ModelLimits.h).
  if (seqLen.getNumOccurrences())
    overrides.seqLen = seqLen;
  if (microbatchSize.getNumOccurrences())
    overrides.microbatchSize = microbatchSize;
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      bitpipe::compile::loadModel(context, inputPath, overrides, units, error);
  if (!module) // The error names the file.
    return fail(error);
  if (failed(mlir::verify(*module)))
    return fail(inputPath + ": the model IR does not verify");

  // The request, checked with the flags' spelling ("--devices must ...").
  if (std::string flagError = checkNumericFlags(); !flagError.empty())
    return fail(flagError);
  bitpipe::PipelineConfig config = pipelineConfig();
  bitpipe::sched::Result<bitpipe::sched::ScheduleOptions> request =
      bitpipe::sched::validate(config.request, "--");
  if (!request)
    return fail(request.error);
  config.request = *request;
  // The lowering verifies the programs itself before it changes anything.
  // Rolled programs cost the passes less; the lowering plans its calls step
  // by step and rolls them again (RankFunction.h).
  config.verify = false;
  config.loops = loops;

  // Schedule, transfers, all-reduce buckets; then runtime calls in the LLVM
  // dialect. Pass failures report their own diagnostics on the ops.
  // One timing tree for the passes and the phases after them; reported
  // when `timing` is destroyed, on every return.
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope timingRoot = timing.getRootScope();

  mlir::PassManager pm(&context);
  pm.enableTiming(timingRoot);
  pm.enableVerifier(verifyEach);
  bitpipe::buildPipeline(pm, config);
  bitpipe::buildLowerToRuntimePipeline(pm, targetOptions);
  if (failed(pm.run(*module)))
    return fail(inputPath + ": compilation failed (see the errors above)");
  if (!verifyEach) {
    mlir::TimingScope verifying = timingRoot.nest("Verify the lowered module");
    if (failed(mlir::verify(*module)))
      return fail(inputPath + ": the lowered module does not verify (an "
                              "internal error; --verify-each names the pass)");
  }

  const bitpipe::compile::OutputTarget target{output, outputFlag};
  Error written = Error::success();
  switch (emit) {
  case EmitKind::MLIR: {
    mlir::TimingScope printing = timingRoot.nest("Print MLIR");
    written = bitpipe::writeOutputFile(
        output, [&](raw_ostream &os) { module->print(os); });
    if (written)
      written = createStringError(inconvertibleErrorCode(),
                                  outputFlag + toString(std::move(written)));
    break;
  }
  case EmitKind::LLVM:
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    written = bitpipe::compile::writeLLVMIR(*module, inputPath, optLevel,
                                            target, timingRoot);
    break;
  case EmitKind::Object:
  case EmitKind::Executable:
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    written = bitpipe::compile::writeObjectCode(
        *module, inputPath, optLevel, {linker, linkFile}, target, timingRoot);
    break;
  }
  if (written)
    return fail(toString(std::move(written)));
  return 0;
}
