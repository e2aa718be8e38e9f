//===- CpuTarget.cpp - The CPU target's link-time hook --------------------===//
//
// createTargetBackend (exec/Backend.h) for `--target cpu` executables: the
// CPU backend with MPI as its transport. Alone in its library
// (BitPipeRuntimeCPUTarget) so that tests can link the backend with a hook
// of their own (CpuBackend.h).
//
//===----------------------------------------------------------------------===//

#include "cpu/CpuBackend.h"

namespace bitpipe::runtime {

std::unique_ptr<Backend> createTargetBackend() { return createCpuBackend(); }

} // namespace bitpipe::runtime
