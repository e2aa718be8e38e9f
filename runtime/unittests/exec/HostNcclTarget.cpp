//===- HostNcclTarget.cpp - The CPU target with an NCCL transport ---------===//
//
// Test-only: createTargetBackend (exec/Backend.h) returning the CPU backend
// whose steps go through the NCCL communicator (comm/nccl) over
// HostNcclCalls.h's MPI stand-in for NCCL, instead of through MPI. A CPU
// program linked with it (runtime-cpu-host-nccl.rsp, or a fake program of
// CMakeLists.txt) then runs its transfers under NCCL's rules on a machine
// without a GPU: strict unless BITPIPE_FAKE_NCCL=loose (HostNcclCalls.h).
// One rank transfers nothing and keeps MPI, as on the CUDA target.
//
//===----------------------------------------------------------------------===//

#include "HostNcclCalls.h"

#include "comm/mpi/MpiCommunicator.h"
#include "comm/nccl/NcclCommunicator.h"
#include "cpu/CpuBackend.h"

namespace bitpipe::runtime {

namespace {

Expected<std::unique_ptr<Communicator>>
hostNcclTransport(MpiCommunicator &bootstrap) {
  if (bootstrap.size() == 1)
    return std::unique_ptr<Communicator>();
  BP_ASSIGN(rules, hostNcclRulesFromEnv("BITPIPE_FAKE_NCCL"));
  BP_ASSIGN(comm, NcclCommunicator::create(
                      bootstrap,
                      createHostNcclCalls(rules.value_or(
                          HostNcclRules::Strict))));
  return std::unique_ptr<Communicator>(std::move(comm));
}

} // namespace

std::unique_ptr<Backend> createTargetBackend() {
  return createCpuBackend(hostNcclTransport);
}

} // namespace bitpipe::runtime
