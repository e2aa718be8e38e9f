//===- BitPipeAttrs.cpp - bitpipe attributes and enums --------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"

#include "llvm/ADT/SmallString.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/base/Spelling.h"
#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::bp;
namespace sched = bitpipe::sched;

#include "bitpipe/Dialect/BitPipe/IR/BitPipeEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.cpp.inc"

void BitPipeDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// PlacementAttr
//===----------------------------------------------------------------------===//

FailureOr<sched::PlacementKind>
bitpipe::bp::parsePlacementKind(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  sched::Result<sched::PlacementKind> kind = sched::parsePlacementKind(name);
  if (kind)
    return *kind;
  parser.emitError(loc) << "#bitpipe.placement: " << kind.error;
  return failure();
}

FailureOr<sched::TransferStreams>
bitpipe::bp::parseTransferStreams(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  if (std::optional<sched::TransferStreams> streams =
          sched::parseTransferStreams(name))
    return *streams;
  parser.emitError(loc) << "#bitpipe.transfer_streams: unknown layout '"
                        << name << "'; expected "
                        << sched::transferStreamsChoices();
  return failure();
}

FailureOr<sched::GradientSync>
bitpipe::bp::parseGradientSync(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  if (std::optional<sched::GradientSync> sync = sched::parseGradientSync(name))
    return *sync;
  parser.emitError(loc) << "#bitpipe.gradient_sync: unknown scheme '" << name
                        << "'; expected " << sched::gradientSyncChoices();
  return failure();
}

FailureOr<sched::Recompute> bitpipe::bp::parseRecompute(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  if (std::optional<sched::Recompute> recompute = sched::parseRecompute(name))
    return *recompute;
  parser.emitError(loc) << "#bitpipe.recompute: unknown mode '" << name
                        << "'; expected " << sched::recomputeChoices();
  return failure();
}

FailureOr<SmallVector<int64_t>> bitpipe::bp::parseIntList(AsmParser &parser) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(values.emplace_back());
      }))
    return failure();
  return values;
}

void bitpipe::bp::printIntList(AsmPrinter &printer, ArrayRef<int64_t> values) {
  raw_ostream &os = printer.getStream();
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
}

FailureOr<bool> bitpipe::bp::parseBool(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(),
                          "expected 'true' or 'false'");
}

FailureOr<SmallVector<DenseI64ArrayAttr>>
bitpipe::bp::parsePipelines(AsmParser &parser) {
  SmallVector<DenseI64ArrayAttr> pipelines;
  auto parsePipeline = [&]() -> ParseResult {
    FailureOr<SmallVector<int64_t>> devices = parseIntList(parser);
    if (failed(devices))
      return failure();
    pipelines.push_back(DenseI64ArrayAttr::get(parser.getContext(), *devices));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     parsePipeline))
    return failure();
  return pipelines;
}

void bitpipe::bp::printPipelines(AsmPrinter &printer,
                                 ArrayRef<DenseI64ArrayAttr> pipelines) {
  raw_ostream &os = printer.getStream();
  os << '[';
  llvm::interleaveComma(pipelines, os, [&](DenseI64ArrayAttr pipeline) {
    printIntList(printer, pipeline.asArrayRef());
  });
  os << ']';
}

//===----------------------------------------------------------------------===//
// PartitionAttr
//===----------------------------------------------------------------------===//

FailureOr<APFloat> bitpipe::bp::parseRatio(AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  return APFloat(value);
}

void bitpipe::bp::printRatio(AsmPrinter &printer, const APFloat &value) {
  // The shortest text that reads back as the same double: 1.0286.
  SmallString<24> text;
  value.toString(text);
  printer << text;
}

LogicalResult
PartitionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t chunks, ArrayRef<int64_t> starts,
                      ArrayRef<int64_t> costs, APFloat ratio) {
  const double balance = ratio.convertToDouble();
  if (chunks < 1)
    return emitError() << "#bitpipe.partition expects at least one chunk, got "
                       << chunks;
  if (static_cast<int64_t>(starts.size()) != chunks ||
      static_cast<int64_t>(costs.size()) != chunks)
    return emitError() << "#bitpipe.partition of " << chunks
                       << " chunks expects one start and one cost per chunk, "
                          "got "
                       << starts.size() << " starts and " << costs.size()
                       << " costs";
  for (size_t k = 0; k < starts.size(); ++k)
    if ((k == 0 && starts[k] != 0) || (k > 0 && starts[k] <= starts[k - 1]))
      return emitError() << "#bitpipe.partition expects starts that begin at "
                            "layer 0 and increase, got starts["
                         << k << "] = " << starts[k];
  if (llvm::any_of(costs, [](int64_t c) { return c < 0; }))
    return emitError() << "#bitpipe.partition expects non-negative costs";
  if (!(balance >= 1.0) || std::isinf(balance))
    return emitError() << "#bitpipe.partition expects a balance (the largest "
                          "cost over the mean) of at least 1, got "
                       << balance;
  return success();
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      sched::PlacementKind kind, int64_t devices,
                      ArrayRef<DenseI64ArrayAttr> pipelines) {
  if (devices < 1)
    return emitError() << "#bitpipe.placement expects at least one device, got "
                       << devices;
  if (devices > sched::limit::kMaxDevices)
    return emitError() << "#bitpipe.placement expects at most "
                       << sched::limit::kMaxDevices
                       << " devices (the schedule registry's limit), got "
                       << devices;

  // One pipeline, or two running in opposite directions.
  size_t expected = sched::pipelineCount(kind);
  if (pipelines.size() != expected)
    return emitError() << "#bitpipe.placement of kind \""
                       << sched::placementKindName(kind) << "\" expects "
                       << expected << " pipeline(s), got " << pipelines.size();

  int64_t numStages = pipelines.front().size();
  if (numStages == 0)
    return emitError() << "#bitpipe.placement expects at least one stage";
  for (auto [p, pipeline] : llvm::enumerate(pipelines)) {
    if (pipeline.size() != numStages)
      return emitError() << "#bitpipe.placement expects every pipeline to "
                            "have the same number of stages, but pipeline "
                         << p << " has " << pipeline.size()
                         << " and pipeline 0 has " << numStages;
    for (auto [s, device] : llvm::enumerate(pipeline.asArrayRef()))
      if (device < 0 || device >= devices)
        return emitError() << "#bitpipe.placement puts stage " << s
                           << " of pipeline " << p << " on device " << device
                           << ", expected a device in [0, " << devices << ")";
  }
  return success();
}

PlacementAttr PlacementAttr::get(MLIRContext *context,
                                 const sched::Placement &placement) {
  SmallVector<DenseI64ArrayAttr> pipelines;
  for (const sched::Pipeline &pipe : placement.pipelines)
    pipelines.push_back(DenseI64ArrayAttr::get(
        context, SmallVector<int64_t>(pipe.stageDevice.begin(),
                                      pipe.stageDevice.end())));
  return get(context, placement.kind, placement.numDevices, pipelines);
}

sched::Placement PlacementAttr::toSched() const {
  sched::Placement p;
  p.kind = getKind();
  p.numDevices = getDevices();
  p.numStages = getNumStages();
  for (DenseI64ArrayAttr pipe : getPipelines())
    p.pipelines.push_back(
        {std::vector<int>(pipe.asArrayRef().begin(), pipe.asArrayRef().end())});
  return p;
}

SmallVector<int64_t> PlacementAttr::getReplicaGroup(unsigned stage) const {
  return getReplicaGroups()[stage];
}

SmallVector<SmallVector<int64_t>> PlacementAttr::getReplicaGroups() const {
  SmallVector<SmallVector<int64_t>> groups;
  for (const std::vector<int> &group : toSched().replicaGroups())
    groups.emplace_back(group.begin(), group.end());
  return groups;
}

SmallVector<std::pair<unsigned, unsigned>>
PlacementAttr::getChunks(int64_t device) const {
  SmallVector<std::pair<unsigned, unsigned>> chunks;
  for (unsigned p = 0, e = getNumPipelines(); p < e; ++p)
    for (unsigned s = 0, n = getNumStages(); s < n; ++s)
      if (getDevice(p, s) == device)
        chunks.emplace_back(p, s);
  return chunks;
}

//===----------------------------------------------------------------------===//
// ScheduleAttr
//===----------------------------------------------------------------------===//

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   StringRef name, int64_t microbatches,
                                   ArrayRef<int64_t> microbatchPipelines,
                                   bool splitBackward, StringRef note) {
  if (!sched::findSchedule(name.str()))
    return emitError() << "#bitpipe.schedule names unknown schedule '" << name
                       << "'"
                       << bitpipe::base::didYouMean(name.str(),
                                                    sched::scheduleNames())
                       << "; expected one of " << sched::scheduleNameList();
  if (microbatches < 1)
    return emitError() << "#bitpipe.schedule expects at least one "
                          "micro-batch, got "
                       << microbatches;
  if (microbatches > sched::limit::kMaxMicrobatches)
    return emitError() << "#bitpipe.schedule expects at most "
                       << sched::limit::kMaxMicrobatches
                       << " micro-batches (the schedule registry's limit), got "
                       << microbatches;
  if (static_cast<int64_t>(microbatchPipelines.size()) != microbatches)
    return emitError() << "#bitpipe.schedule expects one entry of "
                          "microbatch_pipelines per micro-batch ("
                       << microbatches << "), got "
                       << microbatchPipelines.size();
  for (auto [m, p] : llvm::enumerate(microbatchPipelines))
    if (p < 0)
      return emitError() << "#bitpipe.schedule sends micro-batch " << m
                         << " through pipeline " << p
                         << "; expected a pipeline index >= 0";
  return success();
}

ScheduleAttr ScheduleAttr::get(MLIRContext *context,
                               const sched::Schedule &schedule) {
  return get(context, schedule.name, schedule.numMicrobatches,
             SmallVector<int64_t>(schedule.microbatchPipeline.begin(),
                                  schedule.microbatchPipeline.end()),
             schedule.splitBackward, schedule.note);
}

void ScheduleAttr::applyTo(sched::Schedule &schedule) const {
  schedule.name = getName().str();
  schedule.numMicrobatches = getMicrobatches();
  schedule.microbatchPipeline.assign(getMicrobatchPipelines().begin(),
                                     getMicrobatchPipelines().end());
  schedule.splitBackward = getSplitBackward();
  schedule.note = getNote().str();
}
