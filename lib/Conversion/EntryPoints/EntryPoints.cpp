//===- EntryPoints.cpp - Stage entries and program.h's tables -------------===//
//
// The lowered stage functions have as many signatures as stages (one
// pointer per tensor argument; a pointer, a struct of pointers or nothing
// back: the bare-pointer convention of bitpipe-lower-to-llvm). The runtime
// calls them through one C type, `void (*)(void **buffers)`, so each gets a
// small adapter here, and the tables through which the runtime finds the
// adapters and the rank programs by index. This runs on the LLVM dialect,
// after the lowering, because only there is the C signature final.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/EntryPoints/EntryPoints.h"

#include "bitpipe/Conversion/NNToRuntime/NNToRuntime.h"
#include "bitpipe/Conversion/ProgramToRuntime/ProgramToRuntime.h"
#include "bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

namespace bitpipe {
#define GEN_PASS_DEF_EMITENTRYPOINTS
#include "bitpipe/Conversion/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

/// Removes the argument and result attributes that are not the LLVM
/// dialect's (nn.param, bitpipe.saved, ...): the manifest carries the roles
/// now, and the translation to LLVM IR would warn about every one of them.
void dropRoleAttributes(ModuleOp module) {
  auto keep = [](ArrayAttr all) -> ArrayAttr {
    if (!all)
      return all;
    SmallVector<Attribute> kept;
    for (Attribute a : all) {
      NamedAttrList list(cast<DictionaryAttr>(a));
      SmallVector<NamedAttribute> llvmOnly;
      for (NamedAttribute n : list)
        if (n.getName().strref().starts_with("llvm."))
          llvmOnly.push_back(n);
      kept.push_back(DictionaryAttr::get(all.getContext(), llvmOnly));
    }
    return ArrayAttr::get(all.getContext(), kept);
  };
  module.walk([&](LLVM::LLVMFuncOp fn) {
    if (ArrayAttr args = fn.getArgAttrsAttr())
      fn.setArgAttrsAttr(keep(args));
    if (ArrayAttr results = fn.getResAttrsAttr())
      fn.setResAttrsAttr(keep(results));
  });
}

/// The number of results of a lowered function: 0 (void), 1 (a pointer) or
/// R (a struct of R pointers); nothing when the signature is not one of the
/// bare-pointer convention's.
std::optional<unsigned> countPointerResults(LLVM::LLVMFunctionType type) {
  Type result = type.getReturnType();
  if (isa<LLVM::LLVMVoidType>(result))
    return 0;
  if (isa<LLVM::LLVMPointerType>(result))
    return 1;
  auto fields = dyn_cast<LLVM::LLVMStructType>(result);
  if (!fields || !llvm::all_of(fields.getBody(), [](Type field) {
        return isa<LLVM::LLVMPointerType>(field);
      }))
    return std::nullopt;
  return fields.getBody().size();
}

/// `&buffers[i]`.
Value slot(OpBuilder &b, Location loc, Value buffers, int64_t i) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  return b.create<LLVM::GEPOp>(loc, ptr, ptr, buffers,
                               ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
}

/// `llvm.func @<fn>_entry(%buffers: !llvm.ptr)` calling `fn` with
/// buffers[0 .. A-1] and storing its results into buffers[A ..]. A result
/// the lowering turned into a trailing argument (an accumulator of a
/// parameter gradient, kAccumulatedResultsAttrName) is read from its slot
/// instead, where the runtime put the accumulator.
FailureOr<LLVM::LLVMFuncOp> emitEntry(LLVM::LLVMFuncOp fn,
                                      SymbolTable &symbols) {
  LLVM::LLVMFunctionType type = fn.getFunctionType();
  ArrayRef<int64_t> accumulated;
  if (auto list =
          fn->getAttrOfType<DenseI64ArrayAttr>(kAccumulatedResultsAttrName))
    accumulated = list.asArrayRef();
  std::optional<unsigned> numResults = countPointerResults(type);
  if (!numResults || type.isVarArg() ||
      !llvm::all_of(type.getParams(), [](Type param) {
        return isa<LLVM::LLVMPointerType>(param);
      }))
    return fn.emitError() << "has type " << type
                          << "; expected pointer arguments and a pointer, a "
                             "struct of pointers or nothing as result (a "
                             "stage function lowered by "
                             "bitpipe-lower-to-llvm)";
  if (accumulated.size() > type.getNumParams() ||
      llvm::any_of(accumulated,
                   [&](int64_t r) {
                     return r < 0 || r >= static_cast<int64_t>(
                                              *numResults + accumulated.size());
                   }) ||
      !llvm::is_sorted(accumulated) ||
      std::adjacent_find(accumulated.begin(), accumulated.end()) !=
          accumulated.end())
    return fn.emitError() << "has " << kAccumulatedResultsAttrName << " = "
                          << fn->getAttr(kAccumulatedResultsAttrName)
                          << "; expected increasing indices of results "
                             "that became trailing arguments (its "
                          << *numResults << " results and "
                          << type.getNumParams() << " arguments include them)";
  std::string name = (fn.getName() + "_entry").str();
  if (symbols.lookup(name))
    return fn.emitError() << "needs the entry @" << name
                          << ", but the module already has a symbol of that "
                             "name";

  MLIRContext *ctx = fn.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b(fn);
  b.setInsertionPointAfter(fn);
  Location loc = fn.getLoc();
  // A bp_stage_entry_t (ModelSymbols.def).
  auto entry = b.create<LLVM::LLVMFuncOp>(
      loc, name,
      abi::llvmFunctionTypeOf(
          abi::symbolsOf(abi::ModelTable::bitpipe_stage_entries).entry, ctx));
  Block *body = entry.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  Value buffers = body->getArgument(0);

  // The slots of the results the function still returns, in order.
  unsigned numArgs = type.getNumParams() - accumulated.size();
  unsigned numSlots = *numResults + accumulated.size();
  SmallVector<unsigned> returnedSlots;
  for (unsigned r = 0; r < numSlots; ++r)
    if (!llvm::is_contained(accumulated, static_cast<int64_t>(r)))
      returnedSlots.push_back(numArgs + r);

  SmallVector<Value> args;
  auto load = [&](unsigned i) {
    args.push_back(b.create<LLVM::LoadOp>(loc, ptr, slot(b, loc, buffers, i)));
  };
  for (unsigned i = 0; i < numArgs; ++i)
    load(i);
  for (int64_t r : accumulated)
    load(numArgs + r);
  auto call = b.create<LLVM::CallOp>(loc, fn, args);
  if (*numResults == 1) {
    b.create<LLVM::StoreOp>(loc, call.getResult(),
                            slot(b, loc, buffers, returnedSlots[0]));
  } else {
    for (unsigned j = 0; j < *numResults; ++j) {
      Value result = b.create<LLVM::ExtractValueOp>(loc, call.getResult(), j);
      b.create<LLVM::StoreOp>(loc, result,
                              slot(b, loc, buffers, returnedSlots[j]));
    }
  }
  b.create<LLVM::ReturnOp>(loc, ValueRange{});
  symbols.insert(entry);
  return entry;
}

/// `llvm.mlir.global external constant @table() : !llvm.array<N x ptr>`
/// holding the addresses of `functions`, and `@count` = N, as
/// ModelSymbols.def names and types them.
void emitTable(OpBuilder &b, Location loc, abi::ModelTable which,
               ArrayRef<StringRef> functions) {
  MLIRContext *ctx = b.getContext();
  const abi::TableSymbols &symbols = abi::symbolsOf(which);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto arrayType = LLVM::LLVMArrayType::get(ptr, functions.size());
  auto table = b.create<LLVM::GlobalOp>(loc, arrayType, /*isConstant=*/true,
                                        LLVM::Linkage::External, symbols.table,
                                        Attribute());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&table.getInitializerRegion().emplaceBlock());
    Value array = b.create<LLVM::UndefOp>(loc, arrayType);
    for (auto [i, fn] : llvm::enumerate(functions)) {
      Value address = b.create<LLVM::AddressOfOp>(loc, ptr, fn);
      array = b.create<LLVM::InsertValueOp>(loc, array, address, i);
    }
    b.create<LLVM::ReturnOp>(loc, array);
  }
  Type countType = abi::typeOf(symbols.countKind, ctx);
  b.create<LLVM::GlobalOp>(loc, countType, /*isConstant=*/true,
                           LLVM::Linkage::External, symbols.count,
                           b.getIntegerAttr(countType, functions.size()));
}

struct EmitEntryPointsPass
    : bitpipe::impl::EmitEntryPointsBase<EmitEntryPointsPass> {
  void runOnOperation() override {
    if (failed(emit()))
      signalPassFailure();
  }

  /// The symbols of `key` in the entry-points attribute, each an llvm.func.
  FailureOr<SmallVector<LLVM::LLVMFuncOp>>
  functionsOf(DictionaryAttr entry, StringRef key, SymbolTable &symbols);
  LogicalResult emit();
};

FailureOr<SmallVector<LLVM::LLVMFuncOp>>
EmitEntryPointsPass::functionsOf(DictionaryAttr entry, StringRef key,
                                 SymbolTable &symbols) {
  ModuleOp module = getOperation();
  auto list = entry.getAs<ArrayAttr>(key);
  if (!list)
    return module.emitError()
           << "has no list '" << key << "' in '" << kEntryPointsAttrName << "'";
  SmallVector<LLVM::LLVMFuncOp> functions;
  for (Attribute element : list) {
    auto symbol = dyn_cast<FlatSymbolRefAttr>(element);
    auto fn = symbol ? symbols.lookup<LLVM::LLVMFuncOp>(symbol.getValue())
                     : LLVM::LLVMFuncOp();
    if (!fn || fn.isExternal())
      return module.emitError()
             << "lists " << element << " in '" << kEntryPointsAttrName << "' "
             << key
             << ", which is not an llvm.func with a body; expected "
                "the module lowered by bitpipe-lower-to-llvm";
    functions.push_back(fn);
  }
  return functions;
}

LogicalResult EmitEntryPointsPass::emit() {
  ModuleOp module = getOperation();
  auto entry = module->getAttrOfType<DictionaryAttr>(kEntryPointsAttrName);
  if (!entry)
    return module.emitError()
           << "has no '" << kEntryPointsAttrName
           << "'; run bitpipe-lower-program-to-runtime first";
  SymbolTable symbols(module);
  FailureOr<SmallVector<LLVM::LLVMFuncOp>> functions =
      functionsOf(entry, "functions", symbols);
  if (failed(functions))
    return failure();
  FailureOr<SmallVector<LLVM::LLVMFuncOp>> ranks =
      functionsOf(entry, "ranks", symbols);
  if (failed(ranks))
    return failure();
  LLVM::LLVMFunctionType rankType = abi::llvmFunctionTypeOf(
      abi::symbolsOf(abi::ModelTable::bitpipe_rank_programs).entry,
      module.getContext());
  for (LLVM::LLVMFuncOp rank : *ranks)
    if (rank.getFunctionType() != rankType) {
      std::string expected;
      llvm::raw_string_ostream os(expected);
      os << rankType;
      return rank.emitError() << "has type " << rank.getFunctionType()
                              << "; expected a rank program, " << expected;
    }

  SmallVector<std::string> entries;
  for (LLVM::LLVMFuncOp fn : *functions) {
    FailureOr<LLVM::LLVMFuncOp> adapter = emitEntry(fn, symbols);
    if (failed(adapter))
      return failure();
    entries.push_back(adapter->getName().str());
    fn->removeAttr(kAccumulatedResultsAttrName);
  }
  SmallVector<StringRef> entryNames(entries.begin(), entries.end());
  SmallVector<StringRef> rankNames;
  for (LLVM::LLVMFuncOp rank : *ranks)
    rankNames.push_back(rank.getName());

  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  emitTable(b, module.getLoc(), abi::ModelTable::bitpipe_stage_entries,
            entryNames);
  emitTable(b, module.getLoc(), abi::ModelTable::bitpipe_rank_programs,
            rankNames);
  module->removeAttr(kEntryPointsAttrName);
  dropRoleAttributes(module);
  return success();
}

} // namespace
