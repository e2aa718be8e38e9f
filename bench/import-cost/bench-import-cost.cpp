//===- bench-import-cost.cpp - Import + cost analysis of large models -----===//
//
//   bench-import-cost <config.json>...
//
// For each configuration, in one run: builds the model IR (bitpipe-import's
// work), verifies it, prints it to a string, parses it back (what
// bitpipe-opt does with the file) and runs the cost analysis; first at half
// the depth, then at full depth. Prints the median wall time of each and
// their ratio (the work is linear in the number of layers, so the ratio
// should be near 2), and the process's peak resident memory after the full
// model (getrusage; the half-depth model runs first, so the peak is the full
// model's).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Analysis/CostModel.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace mlir;

namespace {

/// Import, print, parse back and cost one model; returns seconds, or a
/// negative value on failure.
double runOnce(const bitpipe::ModelConfig &config, int64_t *params) {
  auto start = std::chrono::steady_clock::now();
  MLIRContext context;
  OwningOpRef<ModuleOp> module = bitpipe::buildModel(context, config);
  if (failed(verify(*module)))
    return -1;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);

  MLIRContext parseContext;
  parseContext.loadDialect<bitpipe::nn::NNDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(text, ParserConfig(&parseContext));
  if (!parsed)
    return -1;
  auto fn = *parsed->getOps<func::FuncOp>().begin();
  FailureOr<bitpipe::ModelCost> cost = bitpipe::analyzeModelCost(fn);
  if (failed(cost))
    return -1;
  *params = cost->parameterCount;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double medianOf(const bitpipe::ModelConfig &config, int repeats,
                int64_t *params) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    double t = runOnce(config, params);
    if (t < 0)
      return -1;
    times.push_back(t);
  }
  return median(times);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench-import-cost <config.json>...\n");
    return 2;
  }
  constexpr int kRepeats = 11;
  std::printf("| model | layers | parameters | half depth (s) | full depth "
              "(s) | full/half | peak RSS (MiB) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int i = 1; i < argc; ++i) {
    llvm::Expected<bitpipe::ModelConfig> config =
        bitpipe::loadModelConfig(argv[i]);
    if (!config) {
      std::fprintf(stderr, "error: %s\n",
                   llvm::toString(config.takeError()).c_str());
      return 1;
    }
    bitpipe::ModelConfig half = *config;
    half.layers = std::max<int64_t>(1, config->layers / 2);
    int64_t halfParams = 0, params = 0;
    double tHalf = medianOf(half, kRepeats, &halfParams);
    double tFull = medianOf(*config, kRepeats, &params);
    if (tHalf < 0 || tFull < 0) {
      std::fprintf(stderr, "error: %s: import or cost analysis failed\n",
                   argv[i]);
      return 1;
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    std::printf("| %s | %lld | %lld | %.3f | %.3f | %.2f | %.1f |\n",
                config->name.c_str(), (long long)config->layers,
                (long long)params, tHalf, tFull, tFull / tHalf,
                usage.ru_maxrss / 1024.0);
  }
  return 0;
}
