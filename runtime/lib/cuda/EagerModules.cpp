//===- EagerModules.cpp - The runtime's kernels, loaded at start-up -------===//
//
// See EagerModules.h. The runtime API has no call that loads a module, so
// the driver's (cuFuncGetModule, cuModuleEnumerateFunctions, cuFuncLoad,
// CUDA 12.4) are looked up through cudaGetDriverEntryPointByVersion: the
// runtime stays linked against cudart alone.
//
//===----------------------------------------------------------------------===//

#include "EagerModules.h"
#include "Launch.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <mutex>
#include <vector>

namespace bitpipe::runtime::cuda {

namespace {

struct Anchor {
  const void *kernel;
  const char *file;
};

/// Filled at static initialisation, read after main starts.
std::vector<Anchor> &anchors() {
  static std::vector<Anchor> *list = new std::vector<Anchor>();
  return *list;
}

int loadedFunctions = 0;

/// The driver's calls, or null where the driver has none.
struct DriverCalls {
  PFN_cuFuncGetModule_v11000 funcGetModule = nullptr;
  PFN_cuModuleGetFunctionCount_v12040 moduleGetFunctionCount = nullptr;
  PFN_cuModuleEnumerateFunctions_v12040 moduleEnumerateFunctions = nullptr;
  PFN_cuFuncLoad_v12040 funcLoad = nullptr;

  bool complete() const {
    return funcGetModule && moduleGetFunctionCount &&
           moduleEnumerateFunctions && funcLoad;
  }
};

template <typename Fn>
void lookUp(const char *symbol, unsigned version, Fn &out) {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault,
                                       &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    out = reinterpret_cast<Fn>(fn);
  else
    cudaGetLastError();
}

DriverCalls driverCalls() {
  DriverCalls d;
  lookUp("cuFuncGetModule", 11000, d.funcGetModule);
  lookUp("cuModuleGetFunctionCount", 12040, d.moduleGetFunctionCount);
  lookUp("cuModuleEnumerateFunctions", 12040, d.moduleEnumerateFunctions);
  lookUp("cuFuncLoad", 12040, d.funcLoad);
  return d;
}

/// "cuFuncLoad: CUDA_ERROR_..." for a failed driver call.
bp_status_t driverFailure(CUresult r, const char *call, const char *file) {
  std::fprintf(stderr,
               "bitpipe: cuda: loading the kernels of %s at start-up: %s "
               "failed (CUresult %d)\n",
               file, call, static_cast<int>(r));
  std::fflush(stderr);
  return BP_ERR_DEVICE;
}

} // namespace

LoadAtStartUp::LoadAtStartUp(const void *kernel, const char *file) {
  anchors().push_back({kernel, file});
}

int registeredModules() { return static_cast<int>(anchors().size()); }

int eagerlyLoadedFunctions() { return loadedFunctions; }

bp_status_t loadModulesEagerly() {
  const DriverCalls driver = driverCalls();
  if (!driver.complete()) {
    std::fprintf(stderr,
                 "bitpipe: cuda: this driver cannot list a module's kernels "
                 "(CUDA 12.4's cuModuleEnumerateFunctions); the runtime's "
                 "kernels load at their first launch\n");
    std::fflush(stderr);
    return BP_OK;
  }
  int loaded = 0;
  for (const Anchor &a : anchors()) {
    cudaFunction_t anchor = nullptr;
    if (bp_status_t s = checkCuda(cudaGetFuncBySymbol(&anchor, a.kernel),
                                  "loading the kernels at start-up "
                                  "(cudaGetFuncBySymbol)");
        s != BP_OK)
      return s;
    CUmodule module = nullptr;
    if (CUresult r = driver.funcGetModule(&module, anchor); r != CUDA_SUCCESS)
      return driverFailure(r, "cuFuncGetModule", a.file);
    unsigned count = 0;
    if (CUresult r = driver.moduleGetFunctionCount(&count, module);
        r != CUDA_SUCCESS)
      return driverFailure(r, "cuModuleGetFunctionCount", a.file);
    std::vector<CUfunction> functions(count);
    if (CUresult r =
            driver.moduleEnumerateFunctions(functions.data(), count, module);
        r != CUDA_SUCCESS)
      return driverFailure(r, "cuModuleEnumerateFunctions", a.file);
    for (CUfunction f : functions) {
      if (CUresult r = driver.funcLoad(f); r != CUDA_SUCCESS)
        return driverFailure(r, "cuFuncLoad", a.file);
      ++loaded;
    }
  }
  loadedFunctions = loaded;
  return BP_OK;
}

} // namespace bitpipe::runtime::cuda
