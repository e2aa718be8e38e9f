//===- Init.cpp - Deterministic parameter initialisation --------*- C++ -*-===//

#include "Init.h"

#include "core/Random.h"

namespace bitpipe::runtime {

// The draw is ~20 fused multiply-adds (core/PortableMath.h); on an x86-64
// baseline build each is a libm call. A second copy of the loop for CPUs
// with FMA, with everything inlined into it (flatten), makes them
// instructions: the same bits (an fma is exact either way), about twice as
// fast, as fast as libm's log and cos.
#if defined(__GNUC__) && defined(__x86_64__)
#define BP_FMA_CLONE __attribute__((target_clones("fma", "default"), flatten))
#else
#define BP_FMA_CLONE
#endif

BP_FMA_CLONE void initNormal(float *out, int64_t count, double stddev,
                             uint64_t seed, std::string_view name,
                             int64_t firstIndex) {
  uint64_t stream = hashName(name);
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<float>(
        stddev *
        randomNormal(seed, stream, static_cast<uint64_t>(firstIndex + i)));
}

void initConstant(float *out, int64_t count, float value) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = value;
}

} // namespace bitpipe::runtime
