//===- EagerModules.h - Kernels loaded at start-up --------------*- C++ -*-===//
//
// CUDA loads a kernel's code on its first launch by default (lazy loading).
// Loading may wait for the whole device, and a launch in a step may come
// while a peer rank's NCCL kernel spins on this device: the host then waits
// for a kernel that waits for a peer that waits for this host, and no
// --timeout can fire. So every module of the runtime's own kernels is loaded
// by bp_cuda_prepare, before any communicator exists.
//
// Each .cu file names one of its kernels with BITPIPE_CUDA_LOAD_AT_START_UP;
// the whole module (every kernel of that file) is loaded through it. The
// process-wide setting (CUDA_MODULE_LOADING=EAGER) would also load
// cuBLASLt's and cuDNN's modules, hundreds of megabytes that a run mostly
// never launches; their kernels are loaded by running their plans at
// start-up instead (docs/runtime-abi.md, "Start-up on CUDA").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_EAGERMODULES_H
#define BITPIPE_RUNTIME_CUDA_EAGERMODULES_H

#include "bitpipe/cuda.h"

namespace bitpipe::runtime::cuda {

/// Registers \p kernel's module for loadModulesEagerly (at static
/// initialisation; one object per .cu file).
struct LoadAtStartUp {
  LoadAtStartUp(const void *kernel, const char *file);
};

/// Loads every function of every registered module. BP_ERR_DEVICE (after a
/// message naming the file) when CUDA refuses; a driver too old to
/// enumerate a module's functions (before CUDA 12.4) is told on stderr once
/// and left to load lazily.
bp_status_t loadModulesEagerly();

/// How many modules were registered, and how many functions the last
/// loadModulesEagerly loaded (for the tests).
int registeredModules();
int eagerlyLoadedFunctions();

} // namespace bitpipe::runtime::cuda

#define BITPIPE_CUDA_LOAD_AT_START_UP_CAT2(a, b) a##b
#define BITPIPE_CUDA_LOAD_AT_START_UP_CAT(a, b)                                \
  BITPIPE_CUDA_LOAD_AT_START_UP_CAT2(a, b)
/// In a .cu file, at namespace scope: `BITPIPE_CUDA_LOAD_AT_START_UP(k);`
/// where k is any kernel of that file (a template's instantiation will do).
/// (Variadic because a template's arguments have commas.)
#define BITPIPE_CUDA_LOAD_AT_START_UP(...)                                     \
  static const ::bitpipe::runtime::cuda::LoadAtStartUp                         \
  BITPIPE_CUDA_LOAD_AT_START_UP_CAT(bitpipeLoadAtStartUp, __LINE__)(           \
      reinterpret_cast<const void *>(&__VA_ARGS__), __FILE__)

#endif // BITPIPE_RUNTIME_CUDA_EAGERMODULES_H
