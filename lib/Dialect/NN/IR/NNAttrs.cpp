//===- NNAttrs.cpp - nn attributes and enums ------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNAttrs.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::nn;

#include "bitpipe/Dialect/NN/IR/NNEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "bitpipe/Dialect/NN/IR/NNAttrs.cpp.inc"

void NNDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "bitpipe/Dialect/NN/IR/NNAttrs.cpp.inc"
      >();
}

FailureOr<std::optional<llvm::APFloat>>
bitpipe::nn::parseStd(AsmParser &parser) {
  double value = 0;
  if (parser.parseFloat(value))
    return failure();
  return std::optional<llvm::APFloat>(llvm::APFloat(value));
}

LogicalResult CostAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t fwdFlops, int64_t bwdFlops,
                               int64_t paramBytes, int64_t actBytes) {
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"fwd_flops", fwdFlops},
        {"bwd_flops", bwdFlops},
        {"param_bytes", paramBytes},
        {"act_bytes", actBytes}})
    if (value < 0)
      return emitError() << "#nn.cost expects " << name
                         << " to be non-negative, got " << value;
  return success();
}

LogicalResult ModelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef family, int64_t layers,
                                int64_t hidden, int64_t heads, int64_t vocab,
                                int64_t maxPositions, int64_t seqLen,
                                int64_t microbatchSize) {
  if (family.empty())
    return emitError() << "#nn.model expects a model family, got \"\"";
  for (auto [name, value] : {std::pair<StringRef, int64_t>{"layers", layers},
                             {"hidden", hidden},
                             {"heads", heads},
                             {"vocab", vocab},
                             {"max_positions", maxPositions},
                             {"seq_len", seqLen},
                             {"microbatch_size", microbatchSize}})
    if (value < 1)
      return emitError() << "#nn.model expects " << name
                         << " to be positive, got " << value;
  return success();
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind,
                               std::optional<llvm::APFloat> std) {
  if (kind == InitKind::Normal) {
    if (!std)
      return emitError() << "#nn.init<normal> needs a standard deviation: "
                            "#nn.init<normal, std = ...>";
    if (!std->isFiniteNonZero() || std->isNegative())
      return emitError() << "#nn.init<normal> expects a positive finite std, "
                            "got "
                         << std->convertToDouble();
    return success();
  }
  if (std)
    return emitError() << "#nn.init<" << stringifyInitKind(kind)
                       << "> takes no std";
  return success();
}
