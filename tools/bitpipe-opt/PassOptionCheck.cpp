//===- PassOptionCheck.cpp - Pass options checked by name -----------------===//

#include "PassOptionCheck.h"

#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"
#include "bitpipe/Support/PassOptionNames.h"
#include "bitpipe/Transforms/Pipeline.h"
#include "bitpipe/base/Spelling.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace {

/// The option names of pass \p argument as its default instance prints
/// them, which leaves out list options that are empty.
std::vector<std::string> passOptionNames(StringRef argument,
                                         const mlir::PassInfo &pass) {
  // "builtin.module(NAME{a=1 b=2})", or NAME alone when it takes none.
  mlir::OpPassManager pm("builtin.module",
                         mlir::OpPassManager::Nesting::Implicit);
  if (failed(pass.addToPipeline(pm, "",
                                [](const Twine &) { return mlir::failure(); })))
    return {};
  std::string printed;
  raw_string_ostream os(printed);
  pm.printAsTextualPipeline(os);
  StringRef text = os.str();
  size_t at = text.find((argument + "{").str());
  if (at == StringRef::npos)
    return {};
  text = text.drop_front(at + argument.size());
  int depth = 0; // the options' braces, to their match
  for (size_t i = 0; i < text.size(); ++i) {
    depth += text[i] == '{' ? 1 : text[i] == '}' ? -1 : 0;
    if (depth == 0)
      return bitpipe::optionNamesInPrintedForm(text.take_front(i + 1));
  }
  return {};
}

/// Whether MLIR refuses \p options of pass \p pass. Its refusal of an
/// unknown name goes to the handler; of a bad value, straight to stderr as
/// the command line's own parse would print it.
bool refuses(const mlir::PassInfo &pass, StringRef options) {
  mlir::OpPassManager pm("builtin.module",
                         mlir::OpPassManager::Nesting::Implicit);
  return failed(pass.addToPipeline(
      pm, options, [](const Twine &) { return mlir::failure(); }));
}

} // namespace

Error bitpipe::checkPassOptionNames(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (!arg.consume_front("-"))
      continue;
    arg.consume_front("-");
    auto [argument, options] = arg.split('=');
    if (argument.size() == arg.size()) // no '=': no options given
      continue;
    // bitpipe's pipelines know all their names; a pass only those its
    // default instance prints, so an unknown one is confirmed by MLIR.
    const mlir::PassInfo *pass = nullptr;
    std::vector<std::string> known;
    if (argument == "bitpipe-pipeline")
      known = pipelineOptionNames();
    else if (argument == "bitpipe-lower-to-runtime")
      known = lowerToRuntimePipelineOptionNames();
    else if ((pass = mlir::PassInfo::lookup(argument)))
      known = passOptionNames(argument, *pass);
    else
      continue;
    for (StringRef option : splitPassOptions(options.trim())) {
      StringRef name = option.split('=').first;
      if (llvm::is_contained(known, name.str()) ||
          (pass && !refuses(*pass, options)))
        continue;
      return createStringError(
          inconvertibleErrorCode(),
          "--" + argument + ": no such option '" + name + "'" +
              base::didYouMean(name.str(), known) + "; " +
              (known.empty() ? std::string("it takes none")
                             : "its options: " + llvm::join(known, ", ")));
    }
  }
  return Error::success();
}
