//===- Memory.h - What one rank keeps in GPU memory during a step -*- C++ -*-===//
//
// The peak memory of a rank on the CUDA target, as the runtime lays it out
// (docs/runtime-abi.md, "Backends"; docs/clusters.md, "Memory"):
//
//   weights        fp32 master weights, plus their bf16 copy under bf16
//   gradients      fp32 accumulators; the all-reduce runs in place on them
//   optimizer      AdamW's two fp32 moments
//   activations    the peak of what the schedule keeps in flight
//                  (the simulator's RankStats::peakInFlightBytes)
//   communication  buffers the transports keep besides (NCCL's own)
//
// Sizes are bytes. Plain arithmetic; what it sums comes from the caller.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_MEMORY_H
#define BITPIPE_SCHEDULE_MEMORY_H

namespace bitpipe::sched {

/// target.precision (docs/runtime-abi.md): the type the stage functions
/// read weights and activations in.
enum class ComputePrecision { Fp32, Bf16 };

struct RankMemory {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double communication = 0;

  double total() const {
    return weights + gradients + optimizer + activations + communication;
  }
};

/// Bytes one parameter costs a rank: 4 (master) + 2 (bf16 copy, bf16 only)
/// + 4 (gradient) + 8 (two moments) = 16 under fp32, 18 under bf16.
double bytesPerParameter(ComputePrecision precision);

/// The memory of a rank holding `parameters` parameters (every stage it
/// holds: BitPipe's and Chimera's ranks hold two pipelines' stages), with
/// `peakActivationBytes` in flight at its peak and `communicationBytes` of
/// transport buffers.
RankMemory rankMemory(double parameters, ComputePrecision precision,
                      double peakActivationBytes, double communicationBytes);
/// rankMemory with AdamW's state kept for `optimizerParameters` of them
/// only: under a sharded optimizer (docs/data-parallel.md, "Sharded
/// optimizer") a stage's moments, and under bf16 its fp32 master weights,
/// are split over the world ranks that hold it, and a rank keeps its share.
RankMemory rankMemory(double parameters, double optimizerParameters,
                      ComputePrecision precision, double peakActivationBytes,
                      double communicationBytes);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_MEMORY_H
