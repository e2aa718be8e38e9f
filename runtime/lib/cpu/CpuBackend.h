//===- CpuBackend.h - The executor's backend on the CPU target --*- C++ -*-===//
//
// The CPU backend (CpuBackend.cpp), made with the transport of its steps:
// MPI itself by default, in host memory. Tests give it another, to run
// compiled CPU programs under another transport's rules (the NCCL
// communicator over the MPI stand-in of runtime/unittests/exec).
//
// The link-time hook createTargetBackend() (exec/Backend.h) is not here but
// in CpuTarget.cpp, a library of its own (BitPipeRuntimeCPUTarget), so that
// a test library can define it instead and link this backend all the same.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_CPUBACKEND_H
#define BITPIPE_RUNTIME_CPU_CPUBACKEND_H

#include "Backend.h"

#include <functional>
#include <memory>

namespace bitpipe::runtime {

/// Makes the steps' transport from the MPI bootstrap, collectively, as
/// Backend::createCommunicator does (null: the bootstrap carries them).
using TransportFactory = std::function<Expected<std::unique_ptr<Communicator>>(
    MpiCommunicator &bootstrap)>;

/// The CPU target's backend; \p transport empty: MPI carries the steps.
std::unique_ptr<Backend> createCpuBackend(TransportFactory transport = {});

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CPU_CPUBACKEND_H
