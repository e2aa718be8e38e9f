//===- GradChunk.h - A parameter gradient's chunk, summed in fp32 -*- C++
//-*-===//
//
// Every CPU kernel of a parameter gradient comes in two forms (Kernels.h's
// BP_GRAD_KERNELS): bp_<kernel>, which accumulates into fp32, and
// bp_<kernel>_g64, which accumulates into the rank's float64 accumulators
// (the CPU target's stage functions call it with them). One template
// serves both: the kernel sums each chunk of a gradient in f32, in its
// fp32 form's order, into GradChunk<Acc>::data(), then finish().
//  - Acc = float: data() is the accumulator itself.
//  - Acc = double: data() is zeroed f32 scratch of the thread's, and
//    finish() adds it into the float64 accumulator. The value added is what
//    the fp32 form leaves in a zeroed buffer: each micro-batch contributes
//    one fp32 value per element, and float64 sums of those hardly depend on
//    their order (docs/training-semantics.md, "The loss and the
//    gradient").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_GRADCHUNK_H
#define BITPIPE_RUNTIME_CPU_KERNELS_GRADCHUNK_H

#include <cstdint>

namespace bitpipe::runtime::cpu {

/// The calling thread's f32 scratch number \p slot (0 or 1: a kernel with
/// two gradients holds two chunks at once) with room for \p count floats,
/// zeroed; null when the host has no room.
float *zeroedThreadScratch(int slot, int64_t count);

/// acc[i] += g[i] for i < \p count, each g[i] widened to float64 (exact).
void addIntoFloat64(double *acc, const float *g, int64_t count);

/// A kernel's f32 chunk of \p count elements of a parameter gradient,
/// which finish() adds into \p acc.
template <typename Acc> class GradChunk;

template <> class GradChunk<float> {
public:
  GradChunk(float *acc, int64_t, int = 0) : acc(acc) {}
  bool ok() const { return true; }
  float *data() const { return acc; }
  void finish() {}

private:
  float *acc;
};

template <> class GradChunk<double> {
public:
  GradChunk(double *acc, int64_t count, int slot = 0)
      : acc(acc), count(count), scratch(zeroedThreadScratch(slot, count)) {}
  /// False when the scratch could not be had: the kernel then fails with
  /// BP_ERR_OUT_OF_MEMORY, and must not touch data().
  bool ok() const { return scratch != nullptr; }
  float *data() const { return scratch; }
  void finish() { addIntoFloat64(acc, scratch, count); }

private:
  double *acc;
  int64_t count;
  float *scratch;
};

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_GRADCHUNK_H
