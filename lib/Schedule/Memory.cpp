//===- Memory.cpp - What one rank keeps in GPU memory during a step -------===//

#include "bitpipe/Schedule/Memory.h"

namespace bitpipe::sched {

namespace {
constexpr double kFp32 = 4, kBf16 = 2;

double weightBytes(ComputePrecision precision) {
  // The fp32 master copy always; the copy the stage functions read under
  // bf16, which the AdamW kernel rewrites (docs/runtime-abi.md).
  return kFp32 + (precision == ComputePrecision::Bf16 ? kBf16 : 0);
}

/// The weights of a rank that updates `optimizerParameters` of its
/// `parameters`: under bf16 the stage functions read the bf16 copy, whole,
/// and the fp32 master weights are kept where the rank updates them only
/// (all of them unless the optimizer is sharded); under fp32 the master
/// weights are what the stage functions read, whole on every rank
/// (docs/data-parallel.md, "Sharded optimizer").
double weightsBytes(double parameters, double optimizerParameters,
                    ComputePrecision precision) {
  if (precision == ComputePrecision::Bf16)
    return parameters * kBf16 + optimizerParameters * kFp32;
  return parameters * kFp32;
}
} // namespace

double bytesPerParameter(ComputePrecision precision) {
  return weightBytes(precision) + kFp32 + 2 * kFp32;
}

RankMemory rankMemory(double parameters, ComputePrecision precision,
                      double peakActivationBytes, double communicationBytes) {
  return rankMemory(parameters, parameters, precision, peakActivationBytes,
                    communicationBytes);
}

RankMemory rankMemory(double parameters, double optimizerParameters,
                      ComputePrecision precision, double peakActivationBytes,
                      double communicationBytes) {
  RankMemory m;
  m.weights = weightsBytes(parameters, optimizerParameters, precision);
  m.gradients = parameters * kFp32;
  m.optimizer = optimizerParameters * 2 * kFp32;
  m.activations = peakActivationBytes;
  m.communication = communicationBytes;
  return m;
}

} // namespace bitpipe::sched
