//===- Init.cpp - Deterministic parameter initialisation --------*- C++ -*-===//

#include "Init.h"

#include "core/Random.h"

namespace bitpipe::runtime {

void initNormal(float *out, int64_t count, double stddev, uint64_t seed,
                std::string_view name, int64_t firstIndex) {
  uint64_t stream = hashName(name);
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<float>(
        stddev * randomNormal(seed, stream,
                              static_cast<uint64_t>(firstIndex + i)));
}

void initConstant(float *out, int64_t count, float value) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = value;
}

} // namespace bitpipe::runtime
