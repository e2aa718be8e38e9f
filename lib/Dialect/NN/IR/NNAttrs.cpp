//===- NNAttrs.cpp - nn attributes and enums ------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNAttrs.h"

#include "bitpipe/Dialect/NN/IR/ModelLimits.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/abi/Dropout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
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

FailureOr<llvm::APFloat> bitpipe::nn::parseProbability(AsmParser &parser) {
  double value = 0;
  if (parser.parseFloat(value))
    return failure();
  return llvm::APFloat(static_cast<float>(value));
}

namespace {

/// Parses `<key = value, ...>` whose keys are `names`, in any order: the
/// generated struct parser, when every field is required, reports a missing
/// one as "expected ','". Integer fields, at most one string field
/// (`stringField`, its index in `names`), and optional keyword fields
/// after the first `numRequired` (an enum's keyword; keyword(i) is empty
/// when absent).
class AttrFieldParser {
public:
  AttrFieldParser(AsmParser &parser, StringRef attr, ArrayRef<StringRef> names,
                  int stringField = -1, size_t numRequired = ~size_t(0))
      : parser(parser), attr(attr), names(names), stringField(stringField),
        numRequired(std::min(numRequired, names.size())), ints(names.size()),
        keywords(names.size()), seen(names.size(), false) {}

  LogicalResult parse() {
    if (parser.parseLess())
      return failure();
    do {
      SMLoc loc = parser.getCurrentLocation();
      StringRef key;
      if (parser.parseKeyword(&key) || parser.parseEqual())
        return failure();
      auto it = llvm::find(names, key);
      if (it == names.end())
        return parser.emitError(loc)
               << attr << " has no field '" << key
               << "' (its fields: " << llvm::join(names, ", ") << ")";
      size_t i = it - names.begin();
      if (seen[i])
        return parser.emitError(loc) << attr << " gives '" << key << "' twice";
      seen[i] = true;
      if (i >= numRequired) {
        if (parser.parseKeyword(&keywords[i]))
          return failure();
      } else if (static_cast<int>(i) == stringField
                     ? parser.parseString(&text)
                     : parser.parseInteger(ints[i])) {
        return failure();
      }
    } while (succeeded(parser.parseOptionalComma()));
    SMLoc end = parser.getCurrentLocation();
    if (parser.parseGreater())
      return failure();
    for (size_t i = 0; i < numRequired; ++i)
      if (!seen[i])
        return parser.emitError(end)
               << attr << " is missing the field '" << names[i] << "'";
    return success();
  }

  int64_t integer(size_t i) const { return ints[i]; }
  StringRef string() const { return text; }
  StringRef keyword(size_t i) const { return keywords[i]; }

private:
  AsmParser &parser;
  StringRef attr;
  ArrayRef<StringRef> names;
  int stringField;
  size_t numRequired;
  SmallVector<int64_t> ints;
  SmallVector<StringRef> keywords;
  SmallVector<bool> seen;
  std::string text;
};

constexpr StringRef kCostFields[] = {"fwd_flops", "bwd_flops", "param_bytes",
                                     "act_bytes"};
/// The required fields, then the optional norm_position.
constexpr StringRef kModelFields[] = {
    "family",        "layers",  "hidden",          "heads",        "vocab",
    "max_positions", "seq_len", "microbatch_size", "norm_position"};
constexpr size_t kModelRequiredFields = 8;

} // namespace

Attribute CostAttr::parse(AsmParser &parser, Type) {
  AttrFieldParser fields(parser, "#nn.cost", kCostFields);
  if (failed(fields.parse()))
    return {};
  return parser.getChecked<CostAttr>(parser.getContext(), fields.integer(0),
                                     fields.integer(1), fields.integer(2),
                                     fields.integer(3));
}

void CostAttr::print(AsmPrinter &printer) const {
  printer << "<fwd_flops = " << getFwdFlops()
          << ", bwd_flops = " << getBwdFlops()
          << ", param_bytes = " << getParamBytes()
          << ", act_bytes = " << getActBytes() << ">";
}

Attribute ModelAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  AttrFieldParser fields(parser, "#nn.model", kModelFields, /*stringField=*/0,
                         kModelRequiredFields);
  if (failed(fields.parse()))
    return {};
  NormPosition position = NormPosition::Pre;
  if (StringRef word = fields.keyword(kModelRequiredFields); !word.empty()) {
    std::optional<NormPosition> parsed = symbolizeNormPosition(word);
    if (!parsed) {
      parser.emitError(loc) << "#nn.model expects norm_position pre or post, "
                               "got '"
                            << word << "'";
      return {};
    }
    position = *parsed;
  }
  return parser.getChecked<ModelAttr>(
      parser.getContext(), fields.string(), fields.integer(1),
      fields.integer(2), fields.integer(3), fields.integer(4),
      fields.integer(5), fields.integer(6), fields.integer(7), position);
}

void ModelAttr::print(AsmPrinter &printer) const {
  printer << "<family = ";
  printer.printString(getFamily());
  printer << ", layers = " << getLayers() << ", hidden = " << getHidden()
          << ", heads = " << getHeads() << ", vocab = " << getVocab()
          << ", max_positions = " << getMaxPositions()
          << ", seq_len = " << getSeqLen()
          << ", microbatch_size = " << getMicrobatchSize();
  // Pre is the default and is not printed: IR written before the field
  // reads back unchanged.
  if (getNormPosition() != NormPosition::Pre)
    printer << ", norm_position = " << stringifyNormPosition(getNormPosition());
  printer << ">";
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
                                int64_t microbatchSize,
                                NormPosition normPosition) {
  if (family.empty())
    return emitError() << "#nn.model expects a model family, got \"\"";
  if (!llvm::is_contained(kModelFamilies, family)) {
    InFlightDiagnostic diag = emitError() << "#nn.model expects family ";
    llvm::interleave(
        kModelFamilies, diag,
        [&](StringRef name) { diag << "\"" << name << "\""; }, " or ");
    return diag << " (the models bitpipe builds), got \"" << family << "\"";
  }
  // The importer's limits (ModelLimits.h), for IR written by hand.
  ModelSizes sizes{{"layers", layers},
                   {"hidden", hidden},
                   {"heads", heads},
                   {"vocab", vocab},
                   {"max_positions", maxPositions},
                   {"seq_len", seqLen},
                   {"microbatch_size", microbatchSize},
                   /*maskedLMHead=*/family == "bert"};
  if (std::optional<std::string> error = checkModelSizes(sizes))
    return emitError() << "#nn.model: " << *error;
  if (normPosition == NormPosition::Post && family != "bert")
    return emitError() << "#nn.model: norm_position = post applies to the "
                          "bert family only, got family \""
                       << family << "\"";
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

LogicalResult DropoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  llvm::APFloat probability, int64_t site) {
  // Zero is no dropout: such a site has no op at all.
  double p = probability.convertToDouble();
  if (std::optional<std::string> error = checkDropoutProbability(p))
    return emitError() << "#nn.dropout " << *error;
  if (p == 0)
    return emitError() << "#nn.dropout expects a probability above 0 (a "
                          "site that drops nothing is no op at all)";
  if (site < 0 || site >= BP_DROPOUT_MAX_SITES)
    return emitError() << "#nn.dropout expects a site in [0, "
                       << BP_DROPOUT_MAX_SITES << "), got " << site;
  return success();
}
