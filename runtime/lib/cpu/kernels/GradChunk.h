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
/// zeroed if \p zeroed; null when the host has no room.
float *threadScratch(int slot, int64_t count, bool zeroed);

/// How a kernel fills its chunk: adding into it (Added: sums over rows,
/// which the float64 form's scratch needs zeroed for), or with a matrix
/// product that can write it whole (Written: the float64 form's product
/// runs with beta = 0 into unzeroed scratch, GradChunk::beta(), where the
/// fp32 form's adds into the accumulator with beta = 1). BLAS clears C for
/// beta = 0 and then accumulates the product into it exactly as into a
/// zeroed C with beta = 1, so both give the same bits (GradKernelsTest).
enum class ChunkFill { Added, Written };

/// acc[i] += g[i] for i < \p count, each g[i] widened to float64 (exact).
void addIntoFloat64(double *acc, const float *g, int64_t count);

/// A kernel's f32 chunk of \p count elements of a parameter gradient,
/// which finish() adds into \p acc.
template <typename Acc> class GradChunk;

template <> class GradChunk<float> {
public:
  GradChunk(float *acc, int64_t, int = 0, ChunkFill = ChunkFill::Added)
      : acc(acc) {}
  bool ok() const { return true; }
  float *data() const { return acc; }
  /// A product's beta: it adds into the accumulator.
  float beta() const { return 1.0f; }
  void finish() {}

private:
  float *acc;
};

template <> class GradChunk<double> {
public:
  GradChunk(double *acc, int64_t count, int slot = 0,
            ChunkFill fill = ChunkFill::Added)
      : acc(acc), count(count), fill(fill),
        scratch(threadScratch(slot, count, fill == ChunkFill::Added)) {}
  /// False when the scratch could not be had: the kernel then fails with
  /// BP_ERR_OUT_OF_MEMORY, and must not touch data().
  bool ok() const { return scratch != nullptr; }
  float *data() const { return scratch; }
  /// A product's beta: it writes the unzeroed scratch whole, or adds into
  /// the zeroed one.
  float beta() const { return fill == ChunkFill::Written ? 0.0f : 1.0f; }
  void finish() { addIntoFloat64(acc, scratch, count); }

private:
  double *acc;
  int64_t count;
  ChunkFill fill;
  float *scratch;
};

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_GRADCHUNK_H
