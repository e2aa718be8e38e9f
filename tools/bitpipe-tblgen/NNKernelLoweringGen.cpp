//===- NNKernelLoweringGen.cpp - nn ops' kernel-call patterns -------------===//
//
// -gen-nn-kernel-lowerings: for every nn op whose definition lists
// `kernelCalls` (include/bitpipe/Dialect/NN/IR/NNKernelCalls.td says what
// they mean), the conversion pattern of bitpipe-lower-nn-to-runtime that
// emits those calls, and the function that adds all of them to a pattern
// set. Each argument is checked against the role of the kernel parameter it
// fills (KernelTable.h), so that a call that does not fit its kernel stops
// the build, naming the op, the kernel and the parameter.
//
//===----------------------------------------------------------------------===//

#include "KernelTable.h"

#include "mlir/TableGen/Format.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace bitpipe::tblgen;
using llvm::formatv;
using llvm::StringRef;
using mlir::tblgen::Operator;

namespace {

/// The name of \p dag's operator (`operand` in `(operand $x)`), or "" when
/// it is no def.
StringRef operatorName(const llvm::DagInit &dag) {
  auto *def = llvm::dyn_cast<llvm::DefInit>(dag.getOperator());
  return def ? def->getDef()->getName() : StringRef();
}

/// \p code (C++ from a .td file) with `$_op` standing for the pattern's op.
std::string onTheOp(StringRef code) {
  mlir::tblgen::FmtContext context;
  context.addSubst("_op", "op");
  return mlir::tblgen::tgfmt(code, &context).str();
}

/// The kinds of arguments of NNKernelCalls.td.
enum class Form {
  Operand,
  Result,
  GradAcc,
  Scratch,    // (scratch sizes...): a new buffer
  ScratchRef, // $name: the buffer an earlier (scratch ...):$name made
  Stat,       // (stat $x, i, sizes...): statistic i of variadic $x, or scratch
  Size,
  F32,
  I32
};

StringRef formName(Form form) {
  switch (form) {
  case Form::Operand:
    return "an operand";
  case Form::Result:
    return "a result";
  case Form::GradAcc:
    return "an accumulated gradient";
  case Form::Scratch:
    return "a new scratch buffer";
  case Form::ScratchRef:
    return "a scratch buffer";
  case Form::Stat:
    return "a statistic";
  case Form::Size:
    return "a size";
  case Form::F32:
    return "an f32 scalar";
  case Form::I32:
    return "an i32 scalar";
  }
  llvm_unreachable("unknown form");
}

/// The roles (bitpipe/abi/KernelRoles.h) an argument of \p form may fill;
/// an optional operand or result is NULL when absent, which only the
/// *_OPT roles accept.
llvm::ArrayRef<StringRef> rolesOf(Form form, bool optional) {
  static const StringRef operand[] = {"ACT_IN",  "WEIGHT",  "WEIGHT_OPT", "IDS",
                                      "RNG_KEY", "LOSS_IN", "STAT_IN"};
  static const StringRef optionalOperand[] = {"WEIGHT_OPT"};
  static const StringRef result[] = {"ACT_OUT", "LOSS_OUT"};
  static const StringRef gradAcc[] = {"GRAD_ACC", "GRAD_ACC_OPT"};
  static const StringRef optionalGradAcc[] = {"GRAD_ACC_OPT"};
  // A new scratch buffer holds nothing yet: it can only be written (a
  // statistic the op does not return, or a loss it discards).
  static const StringRef scratch[] = {"STAT_OUT", "LOSS_OUT"};
  static const StringRef scratchRef[] = {"STAT_OUT", "STAT_IN"};
  // A statistic the op returns (written) or reads (an operand, or scratch
  // that a call under emitIf writes first).
  static const StringRef stat[] = {"STAT_OUT", "STAT_IN"};
  static const StringRef size[] = {"DIM"};
  static const StringRef f32[] = {"SCALAR"};
  static const StringRef i32[] = {"INT"};
  switch (form) {
  case Form::Operand:
    return optional ? llvm::ArrayRef(optionalOperand) : llvm::ArrayRef(operand);
  case Form::Result:
    return result;
  case Form::GradAcc:
    return optional ? llvm::ArrayRef(optionalGradAcc) : llvm::ArrayRef(gradAcc);
  case Form::Scratch:
    return scratch;
  case Form::ScratchRef:
    return scratchRef;
  case Form::Stat:
    return stat;
  case Form::Size:
    return size;
  case Form::F32:
    return f32;
  case Form::I32:
    return i32;
  }
  llvm_unreachable("unknown form");
}

/// A buffer the pattern makes before its calls: a result's or a scratch.
struct Buffer {
  Form form;
  std::string variable;
  /// The statements that define the variable.
  std::string definition;
  /// An Optional result: the variable is null when the op has none.
  bool optional = false;
};

/// One kernel call: the abi::Kernel expression and the arguments' C++.
struct Call {
  std::string kernel;
  std::string kernelNames; // for the pattern's comment
  std::vector<std::string> args;
  std::string condition; // emitIf: the call is made only when it holds
};

/// One nn op's kernel calls, read and checked.
class OpLowering {
public:
  explicit OpLowering(const llvm::Record &def) : def(def), op(def) {
    results.resize(op.getNumResults());
    for (auto [i, call] :
         llvm::enumerate(def.getValueAsListOfDefs("kernelCalls")))
      calls.push_back(readCall(i, *call));
    for (auto [i, buffer] : llvm::enumerate(results)) {
      if (op.getResult(i).isVariadic()) {
        auto found = statResults.find(i);
        if (found == statResults.end())
          fail(formatv("variadic result '{0}' is in no kernel call; its "
                       "statistics must be (stat ${0}, i, ...) arguments",
                       op.getResultName(i)));
        for (auto [k, variable] : llvm::enumerate(found->second))
          if (variable.empty())
            fail(formatv("statistic {0} of '{1}' is in no kernel call", k,
                         op.getResultName(i)));
        continue;
      }
      if (!buffer)
        fail(formatv("result '{0}' is in no kernel call; each result must be "
                     "the (result ...) or (grad_acc ...) argument of one",
                     op.getResultName(i)));
    }
  }

  std::string patternName() const {
    return (op.getCppClassName() + "KernelLowering").str();
  }
  /// Whether the pattern follows the GradientSumPlan: it has a grad_acc.
  bool accumulates() const {
    return llvm::any_of(results, [](auto &buffer) {
      return buffer && buffer->form == Form::GradAcc;
    });
  }

  void emit(llvm::raw_ostream &os) const {
    StringRef base = accumulates() ? "GradientPattern" : "KernelPattern";
    std::string opClass = op.getQualCppClassName();
    std::string kernels;
    for (const Call &call : calls)
      kernels += (kernels.empty() ? "" : ", ") + call.kernelNames;
    os << formatv("/// {0}: {1}.\n", op.getOperationName(), kernels);
    os << formatv("struct {0} : {1}<{2}> {{\n", patternName(), base, opClass);
    os << formatv("  using {0}::{0};\n", base);
    os << formatv("  LogicalResult\n"
                  "  matchAndRewrite({0} op, OpAdaptor adaptor,\n"
                  "                  ConversionPatternRewriter &rewriter) "
                  "const override {{\n",
                  opClass);
    os << "    KernelCallEmitter emit = this->emitter(op, rewriter);\n";
    for (const std::optional<Buffer> &buffer : results)
      if (buffer)
        os << buffer->definition;
    for (const Buffer &buffer : scratch)
      os << buffer.definition;
    for (const Call &call : calls) {
      std::string indent = call.condition.empty() ? "    " : "      ";
      if (!call.condition.empty())
        os << "    if (" << call.condition << ")\n";
      os << indent << "emit.call(" << call.kernel << ",\n"
         << indent << "          {";
      llvm::interleave(call.args, os, ",\n" + indent + "           ");
      os << "});\n";
    }
    bool plain = statResults.empty() &&
                 llvm::none_of(results, [](auto &b) { return b->optional; });
    if (plain) {
      os << "    rewriter.replaceOp(op, ValueRange{";
      llvm::interleaveComma(results, os,
                            [&](auto &buffer) { os << buffer->variable; });
      os << "});\n";
    } else {
      os << "    SmallVector<Value> results;\n";
      for (auto [i, buffer] : llvm::enumerate(results)) {
        if (op.getResult(i).isVariadic()) {
          // The statistics, when the op returns them.
          os << formatv("    if (!{0}.empty())\n      results.append({{",
                        getter(op.getResultName(i)));
          llvm::interleaveComma(statResults.at(i), os);
          os << "});\n";
          continue;
        }
        os << formatv(buffer->optional
                          ? "    if ({0})\n      results.push_back({0});\n"
                          : "    results.push_back({0});\n",
                      buffer->variable);
      }
      os << "    rewriter.replaceOp(op, results);\n";
    }
    os << "    return success();\n  }\n};\n\n";
  }

private:
  [[noreturn]] void fail(const llvm::Twine &message) const {
    llvm::PrintFatalError(&def, op.getOperationName() + ": " + message);
  }

  /// What an argument of \p call refers to by `$name`.
  enum class Ref { Operand, Result, Attribute };
  std::optional<int> indexOf(Ref ref, StringRef name) const {
    switch (ref) {
    case Ref::Operand:
      for (int i = 0; i < op.getNumOperands(); ++i)
        if (op.getOperand(i).name == name)
          return i;
      break;
    case Ref::Result:
      for (int i = 0; i < op.getNumResults(); ++i)
        if (op.getResultName(i) == name)
          return i;
      break;
    case Ref::Attribute:
      for (int i = 0; i < op.getNumAttributes(); ++i)
        if (op.getAttribute(i).name == name)
          return i;
      break;
    }
    return std::nullopt;
  }

  std::string getter(StringRef name) const {
    return "op." + op.getGetterName(name) + "()";
  }

  /// `$name` as the \p i-th argument of \p dag, or fails with \p where.
  StringRef nameArg(const llvm::DagInit &dag, unsigned i,
                    const llvm::Twine &where) const {
    if (i >= dag.getNumArgs() || !dag.getArgName(i) ||
        !llvm::isa<llvm::UnsetInit>(dag.getArg(i)))
      fail(where + ": expected `$name` as argument " + llvm::Twine(i) + " of " +
           dag.getAsString());
    return dag.getArgNameStr(i);
  }

  /// The tensor (operand or result) named by argument \p i of \p dag.
  std::string tensorArg(const llvm::DagInit &dag, unsigned i,
                        const llvm::Twine &where) const {
    StringRef name = nameArg(dag, i, where);
    if (auto operand = indexOf(Ref::Operand, name)) {
      if (op.getOperand(*operand).isVariableLength())
        fail(where + ": '" + name +
             "' is an Optional or variadic operand, which has no size");
      return getter(name);
    }
    if (auto result = indexOf(Ref::Result, name)) {
      if (op.getResult(*result).isVariableLength())
        fail(where + ": '" + name +
             "' is an Optional or variadic result, which has no size");
      return getter(name);
    }
    fail(where + ": '" + name + "' is neither an operand nor a result");
  }

  /// A size (i64): (rows $x), (last_dim $x), (dim $x, i), (numel $x) or
  /// (i64 "code").
  std::string sizeExpr(const llvm::DagInit &dag,
                       const llvm::Twine &where) const {
    StringRef form = operatorName(dag);
    auto arity = [&](unsigned n) {
      if (dag.getNumArgs() != n)
        fail(where + ": (" + form + " ...) takes " + llvm::Twine(n) +
             " argument(s), not " + llvm::Twine(dag.getNumArgs()));
    };
    if (form == "rows" || form == "last_dim" || form == "numel") {
      arity(1);
      StringRef helper = form == "rows"       ? "rows"
                         : form == "last_dim" ? "lastDim"
                                              : "numElements";
      return (helper + "(" + tensorArg(dag, 0, where) + ")").str();
    }
    if (form == "dim") {
      arity(2);
      auto *index = llvm::dyn_cast<llvm::IntInit>(dag.getArg(1));
      if (!index || index->getValue() < 0)
        fail(where + ": (dim $x, i) needs a dimension index i >= 0");
      return formatv("dimSize({0}, {1})", tensorArg(dag, 0, where),
                     index->getValue());
    }
    if (form == "i64") {
      arity(1);
      return code(dag, where);
    }
    fail(where +
         ": expected a size, (rows $x), (last_dim $x), (dim $x, i), "
         "(numel $x) or (i64 \"code\"), not " +
         dag.getAsString());
  }

  /// The C++ of (f32 "code"), (i32 "code") or (i64 "code"), `$_op` the op.
  std::string code(const llvm::DagInit &dag, const llvm::Twine &where) const {
    auto *text = llvm::dyn_cast<llvm::StringInit>(dag.getArg(0));
    if (!text)
      fail(where + ": expected a C++ expression in quotes in " +
           dag.getAsString());
    return "(" + onTheOp(text->getValue()) + ")";
  }

  /// A scalar from an attribute ($name) or code.
  std::string scalarExpr(const llvm::DagInit &dag, Form form,
                         const llvm::Twine &where) const {
    if (dag.getNumArgs() != 1)
      fail(where + ": " + dag.getAsString() + " takes one argument");
    if (llvm::isa<llvm::StringInit>(dag.getArg(0)))
      return code(dag, where);
    StringRef name = nameArg(dag, 0, where);
    auto index = indexOf(Ref::Attribute, name);
    if (!index)
      fail(where + ": '" + name + "' is not an attribute of the op");
    mlir::tblgen::Attribute attr = op.getAttribute(*index).attr;
    if (attr.isOptional() && !attr.hasDefaultValue())
      fail(where + ": attribute '" + name +
           "' is optional without a default; pass it as code");
    StringRef storage = attr.getStorageType();
    if (form == Form::F32 && storage == "::mlir::FloatAttr")
      return getter(name) + ".convertToFloat()";
    if (form == Form::I32 && storage == "::mlir::IntegerAttr")
      return "op." + op.getGetterName(name) + "Attr().getInt()";
    fail(where + ": attribute '" + name + "' is stored as " + storage + "; (" +
         (form == Form::F32 ? "f32" : "i32") + " $attr) reads " +
         (form == Form::F32 ? "a ::mlir::FloatAttr" : "a ::mlir::IntegerAttr") +
         " (pass anything else as code)");
  }

  /// The argument \p arg (named \p argName in the call's dag) of kernel
  /// parameter \p param: its C++, after checking that its form may fill
  /// the parameter's role.
  std::string readArg(const llvm::Init *arg, StringRef argName,
                      const KernelParam &param, const llvm::Twine &where) {
    // A bare `$name`: a scratch buffer an earlier argument made.
    if (llvm::isa<llvm::UnsetInit>(arg)) {
      auto found = scratchByName.find(argName);
      if (found == scratchByName.end())
        fail(where + ": `$" + argName +
             "` names no scratch buffer made by an earlier argument");
      checkRole(Form::ScratchRef, false, param, where);
      return "emit.pointer(" + scratch[found->second].variable + ")";
    }
    auto *dag = llvm::dyn_cast<llvm::DagInit>(arg);
    if (!dag || operatorName(*dag).empty())
      fail(where + ": expected a form such as (operand $x), not " +
           arg->getAsString());
    StringRef form = operatorName(*dag);

    if (form == "operand") {
      StringRef name = nameArg(*dag, 0, where);
      auto index = indexOf(Ref::Operand, name);
      if (!index)
        fail(where + ": '" + name + "' is not an operand of the op");
      const auto &operand = op.getOperand(*index);
      if (operand.isVariadic())
        fail(where + ": operand '" + name + "' is variadic");
      checkRole(Form::Operand, operand.isOptional(), param, where);
      std::string buffer = "adaptor." + op.getGetterName(name) + "()";
      if (operand.isOptional())
        return buffer + " ? emit.pointer(" + buffer + ") : emit.null()";
      return "emit.pointer(" + buffer + ")";
    }

    if (form == "result" || form == "grad_acc") {
      Form kind = form == "result" ? Form::Result : Form::GradAcc;
      StringRef name = nameArg(*dag, 0, where);
      auto index = indexOf(Ref::Result, name);
      if (!index)
        fail(where + ": '" + name + "' is not a result of the op");
      const auto &result = op.getResult(*index);
      if (result.isVariadic() || (kind == Form::Result && result.isOptional()))
        fail(where + ": result '" + name + "' is " +
             (result.isVariadic() ? "variadic" : "Optional") +
             "; only a (grad_acc ...) result may be Optional");
      checkRole(kind, result.isOptional(), param, where);
      std::optional<Buffer> &buffer = results[*index];
      if (!buffer)
        buffer = resultBuffer(kind, name, result.isOptional());
      else if (buffer->form != kind)
        fail(where + ": result '" + name + "' is " + formName(buffer->form) +
             " in an earlier argument");
      if (buffer->optional)
        return buffer->variable + " ? emit.pointer(" + buffer->variable +
               ") : emit.null()";
      return "emit.pointer(" + buffer->variable + ")";
    }

    if (form == "scratch") {
      checkRole(Form::Scratch, false, param, where);
      if (dag->getNumArgs() == 0)
        fail(where + ": (scratch ...) needs the buffer's sizes");
      std::vector<std::string> sizes;
      for (auto [i, size] : llvm::enumerate(dag->getArgs())) {
        auto *sizeDag = llvm::dyn_cast<llvm::DagInit>(size);
        if (!sizeDag || operatorName(*sizeDag).empty())
          fail(where + ": size " + llvm::Twine(i) +
               " of (scratch ...) is not a size form");
        sizes.push_back(sizeExpr(*sizeDag, where));
      }
      Buffer buffer{Form::Scratch,
                    (argName.empty()
                         ? "scratch" + std::to_string(scratch.size())
                         : llvm::convertToCamelFromSnakeCase(argName)) +
                        "Buffer",
                    "", false};
      // Only the call under emitIf uses an unnamed one: allocated when the
      // call is made.
      std::string alloc =
          "emit.allocScratch({" + llvm::join(sizes, ", ") + "})";
      if (argName.empty() && !callCondition.empty())
        alloc = "(" + callCondition + ") ? " + alloc + " : Value()";
      buffer.definition =
          "    Value " + buffer.variable + " = " + alloc + ";\n";
      if (!argName.empty() &&
          !scratchByName.try_emplace(argName, scratch.size()).second)
        fail(where + ": a scratch buffer named '" + argName + "' exists");
      scratch.push_back(std::move(buffer));
      return "emit.pointer(" + scratch.back().variable + ")";
    }

    if (form == "stat") {
      checkRole(Form::Stat, false, param, where);
      return "emit.pointer(" + statBuffer(*dag, argName, where) + ")";
    }

    if (form == "f32" || form == "i32") {
      Form kind = form == "f32" ? Form::F32 : Form::I32;
      checkRole(kind, false, param, where);
      return (form == "f32" ? "emit.f32(" : "emit.i32(") +
             scalarExpr(*dag, kind, where) + ")";
    }

    static const StringRef sizeForms[] = {"rows", "last_dim", "dim", "numel",
                                          "i64"};
    if (!llvm::is_contained(sizeForms, form))
      fail(where + ": unknown form (" + form +
           " ...); expected operand, result, grad_acc, scratch, stat, rows, "
           "last_dim, dim, numel, i64, f32 or i32");
    checkRole(Form::Size, false, param, where);
    return "emit.i64(" + sizeExpr(*dag, where) + ")";
  }

  /// The buffer of (stat $x, i, sizes...): statistic i of the variadic
  /// result or operand $x when the op has them, else a scratch buffer of
  /// those sizes. Named with `:$name`, a later `$name` is the same buffer.
  std::string statBuffer(const llvm::DagInit &dag, StringRef argName,
                         const llvm::Twine &where) {
    if (dag.getNumArgs() < 3)
      fail(where + ": (stat $x, i, sizes...) needs the variadic value, the "
                   "statistic's index and the scratch buffer's sizes");
    StringRef name = nameArg(dag, 0, where);
    auto *index = llvm::dyn_cast<llvm::IntInit>(dag.getArg(1));
    if (!index || index->getValue() < 0)
      fail(where + ": (stat $x, i, ...) needs an index i >= 0");
    unsigned i = index->getValue();
    std::string present;
    std::string value;
    auto resultIndex = indexOf(Ref::Result, name);
    auto operandIndex = indexOf(Ref::Operand, name);
    if (resultIndex && op.getResult(*resultIndex).isVariadic()) {
      present = getter(name);
      value = formatv("emit.alloc({0}[{1}].getType())", present, i);
    } else if (operandIndex && op.getOperand(*operandIndex).isVariadic()) {
      present = "adaptor." + op.getGetterName(name) + "()";
      value = formatv("{0}[{1}]", present, i);
    } else {
      fail(where + ": '" + name + "' is no variadic result or operand");
    }
    std::vector<std::string> sizes;
    for (unsigned k = 2; k < dag.getNumArgs(); ++k) {
      auto *sizeDag = llvm::dyn_cast<llvm::DagInit>(dag.getArg(k));
      if (!sizeDag || operatorName(*sizeDag).empty())
        fail(where + ": size " + llvm::Twine(k - 2) +
             " of (stat ...) is not a size form");
      sizes.push_back(sizeExpr(*sizeDag, where));
    }
    Buffer buffer{Form::Stat,
                  llvm::convertToCamelFromSnakeCase(name) + std::to_string(i) +
                      "Buffer",
                  "", false};
    buffer.definition =
        formatv("    Value {0} = {1}.empty() ? emit.allocScratch({{{2}}) : "
                "Value({3});\n",
                buffer.variable, present, llvm::join(sizes, ", "), value);
    if (resultIndex) {
      std::vector<std::string> &vars = statResults[*resultIndex];
      if (vars.size() <= i)
        vars.resize(i + 1);
      if (!vars[i].empty())
        fail(where + ": statistic " + llvm::Twine(i) + " of '" + name +
             "' is made by an earlier argument; name it (:$name) and pass "
             "the name");
      vars[i] = buffer.variable;
    }
    if (!argName.empty() &&
        !scratchByName.try_emplace(argName, scratch.size()).second)
      fail(where + ": a buffer named '" + argName + "' exists");
    scratch.push_back(buffer);
    return buffer.variable;
  }

  Buffer resultBuffer(Form kind, StringRef name, bool optional) const {
    Buffer buffer{kind, llvm::convertToCamelFromSnakeCase(name) + "Buffer", "",
                  optional};
    std::string value = getter(name);
    if (kind == Form::Result)
      buffer.definition =
          formatv("    Value {0} = emit.alloc({1}.getType());\n",
                  buffer.variable, value);
    else if (!optional)
      buffer.definition =
          formatv("    Value {0} = accumulator(emit, {1}, rewriter);\n",
                  buffer.variable, value);
    else
      buffer.definition = formatv("    Value {0};\n"
                                  "    if (Value result = {1})\n"
                                  "      {0} = accumulator(emit, result, "
                                  "rewriter);\n",
                                  buffer.variable, value);
    return buffer;
  }

  void checkRole(Form form, bool optional, const KernelParam &param,
                 const llvm::Twine &where) const {
    llvm::ArrayRef<StringRef> roles = rolesOf(form, optional);
    if (llvm::is_contained(roles, param.role))
      return;
    fail(where + ": " + formName(form) + (optional ? " (Optional)" : "") +
         " cannot fill a parameter of role " + param.role + "; it fills " +
         llvm::join(roles, ", ") + (optional ? " (NULL when absent)" : ""));
  }

  Call readCall(size_t index, const llvm::Record &record) {
    StringRef kernelName = record.getValueAsString("kernel");
    std::string where =
        formatv("kernelCalls[{0}] (bp_{1})", index, kernelName).str();
    const KernelInfo *kernel = lookupKernel(kernelName);
    if (!kernel)
      fail(where + ": no kernel '" + kernelName +
           "' in runtime/include/bitpipe/abi/Kernels.h's BP_KERNELS");
    Call call;
    call.kernel = ("Kernel::bp_" + kernelName).str();
    call.kernelNames = ("bp_" + kernelName).str();
    StringRef variantName = record.getValueAsString("variant");
    if (!variantName.empty()) {
      const KernelInfo *variant = lookupKernel(variantName);
      if (!variant)
        fail(where + ": no variant kernel '" + variantName +
             "' in runtime/include/bitpipe/abi/Kernels.h's BP_KERNELS");
      auto roles = [](const KernelInfo &k) {
        std::vector<StringRef> r;
        for (const KernelParam &p : k.params)
          r.push_back(p.role);
        return r;
      };
      if (roles(*variant) != roles(*kernel))
        fail(where + ": the variant bp_" + variantName + " does not take bp_" +
             kernelName + "'s parameters");
      std::string condition = onTheOp(record.getValueAsString("variantIf"));
      if (StringRef(condition).trim().empty())
        fail(where + ": a variant needs its condition (variantIf)");
      call.kernel =
          formatv("({0}) ? Kernel::bp_{1} : Kernel::bp_{2}",
                  StringRef(condition).trim(), variantName, kernelName);
      call.kernelNames += " or bp_" + variantName.str();
    }
    call.condition =
        StringRef(onTheOp(record.getValueAsString("emitIf"))).trim().str();
    if (!call.condition.empty())
      call.kernelNames += " (when " + call.condition + ")";
    callCondition = call.condition;

    const llvm::DagInit *args = record.getValueAsDag("args");
    if (operatorName(*args) != "call")
      fail(where + ": the arguments are a (call ...) dag");
    if (args->getNumArgs() != kernel->params.size())
      fail(formatv("{0}: {1} arguments for the kernel's {2} parameters ({3})",
                   where, args->getNumArgs(), kernel->params.size(),
                   paramList(*kernel)));
    for (auto [i, param] : llvm::enumerate(kernel->params)) {
      std::string argWhere = formatv("{0}, argument {1} ({2}, {3})", where, i,
                                     param.name, param.role);
      call.args.push_back(
          readArg(args->getArg(i), args->getArgNameStr(i), param, argWhere));
    }
    return call;
  }

  static std::string paramList(const KernelInfo &kernel) {
    std::vector<std::string> params;
    for (const KernelParam &param : kernel.params)
      params.push_back((param.role + " " + param.name).str());
    return llvm::join(params, ", ");
  }

  const llvm::Record &def;
  Operator op;
  std::vector<Call> calls;
  /// The emitIf of the call whose arguments are being read.
  std::string callCondition;
  std::vector<std::optional<Buffer>> results;
  /// Per variadic result: the buffers of its statistics, by index.
  std::map<unsigned, std::vector<std::string>> statResults;
  std::vector<Buffer> scratch;
  llvm::StringMap<unsigned> scratchByName;
};

bool emitNNKernelLowerings(const llvm::RecordKeeper &records,
                           llvm::raw_ostream &os) {
  llvm::emitSourceFileHeader("nn ops' kernel-call patterns", os, records);
  std::vector<OpLowering> ops;
  for (const llvm::Record *def : records.getAllDerivedDefinitions("NN_Op"))
    if (!def->getValueAsListOfDefs("kernelCalls").empty())
      ops.emplace_back(*def);

  for (const OpLowering &op : ops)
    op.emit(os);

  os << "/// Adds the patterns above to \\p patterns.\n"
        "static void populateKernelCallPatterns(const TypeConverter "
        "&converter,\n"
        "                                       RewritePatternSet &patterns,\n"
        "                                       Precision precision,\n"
        "                                       const GradientSumPlan &sums) "
        "{\n"
        "  MLIRContext *context = patterns.getContext();\n";
  for (const OpLowering &op : ops)
    os << formatv(op.accumulates()
                      ? "  patterns.add<{0}>(converter, context, precision, "
                        "sums);\n"
                      : "  patterns.add<{0}>(converter, context, "
                        "precision);\n",
                  op.patternName());
  os << "}\n";
  return false;
}

mlir::GenRegistration
    genNNKernelLowerings("gen-nn-kernel-lowerings",
                         "Generate bitpipe-lower-nn-to-runtime's patterns "
                         "from the nn ops' kernelCalls",
                         emitNNKernelLowerings);

} // namespace
