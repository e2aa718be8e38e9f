//===- BitPipeAttrs.cpp - bitpipe attributes and enums --------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::bp;

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

FailureOr<PlacementKind> bitpipe::bp::parsePlacementKind(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  if (std::optional<PlacementKind> kind = symbolizePlacementKind(name))
    return *kind;
  parser.emitError(loc) << "unknown placement kind \"" << name
                        << "\"; expected \"loop\", \"v\", \"bidirectional\" "
                           "or \"bidirectional-v\"";
  return failure();
}

FailureOr<SmallVector<DenseI64ArrayAttr>>
bitpipe::bp::parsePipelines(AsmParser &parser) {
  SmallVector<DenseI64ArrayAttr> pipelines;
  auto parsePipeline = [&]() -> ParseResult {
    SmallVector<int64_t> devices;
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
          return parser.parseInteger(devices.emplace_back());
        }))
      return failure();
    pipelines.push_back(DenseI64ArrayAttr::get(parser.getContext(), devices));
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
    os << '[';
    llvm::interleaveComma(pipeline.asArrayRef(), os);
    os << ']';
  });
  os << ']';
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      PlacementKind kind, int64_t devices,
                      ArrayRef<DenseI64ArrayAttr> pipelines) {
  if (devices < 1)
    return emitError() << "#bitpipe.placement expects at least one device, got "
                       << devices;

  // One pipeline, or two running in opposite directions.
  size_t expected =
      kind == PlacementKind::Loop || kind == PlacementKind::V ? 1 : 2;
  if (pipelines.size() != expected)
    return emitError() << "#bitpipe.placement of kind \""
                       << stringifyPlacementKind(kind) << "\" expects "
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

SmallVector<int64_t> PlacementAttr::getReplicaGroup(unsigned stage) const {
  SmallVector<int64_t> group;
  for (unsigned p = 0, e = getNumPipelines(); p < e; ++p)
    group.push_back(getDevice(p, stage));
  llvm::sort(group);
  group.erase(std::unique(group.begin(), group.end()), group.end());
  return group;
}

SmallVector<SmallVector<int64_t>> PlacementAttr::getReplicaGroups() const {
  SmallVector<SmallVector<int64_t>> groups;
  for (unsigned s = 0, e = getNumStages(); s < e; ++s)
    groups.push_back(getReplicaGroup(s));
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
