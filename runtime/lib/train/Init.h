//===- Init.h - Deterministic parameter initialisation ----------*- C++ -*-===//
//
// A parameter's initial value depends only on (seed, parameter name, element
// index): the name is hashed into the random stream (core/Random.h). So the
// same parameter gets the same values on every rank that holds it, whichever
// stage or rank that is, and a pipeline run starts from exactly the weights
// of a one-process run -- the precondition of the project's end-to-end
// equivalence test -- and the CUDA target draws the same bits on the device
// (core/PortableMath.h). So a fresh start broadcasts nothing.
//
// GPT-2's recipe in these terms: initNormal(std 0.02) for weights and
// embeddings, std 0.02 / sqrt(2 L) for the two residual output projections,
// initZeros for biases, initOnes for layer-norm gains.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_INIT_H
#define BITPIPE_RUNTIME_TRAIN_INIT_H

#include <cstdint>
#include <string_view>

namespace bitpipe::runtime {

/// out[i] = stddev * N(0, 1) drawn for element firstIndex + i of parameter
/// \p name: a slice of a parameter initialises exactly as the same elements
/// of the whole parameter.
void initNormal(float *out, int64_t count, double stddev, uint64_t seed,
                std::string_view name, int64_t firstIndex = 0);

void initConstant(float *out, int64_t count, float value);
inline void initZeros(float *out, int64_t count) {
  initConstant(out, count, 0.0f);
}
inline void initOnes(float *out, int64_t count) {
  initConstant(out, count, 1.0f);
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_INIT_H
