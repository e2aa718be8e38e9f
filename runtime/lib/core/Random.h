//===- Random.h - Counter-based random numbers ------------------*- C++ -*-===//
//
// Every random number in the runtime (initial weights, sample offsets, BERT
// masks) is a pure function of (seed, stream, counter): there is no generator
// state to carry, so a value does not depend on which rank computes it, in
// which order, or how many values were drawn before. That is what lets a
// pipeline run reproduce a one-process run bit for bit.
//
// The mixer is SplitMix64's finaliser applied in a chain; it is not
// cryptographic, only well distributed, which is all training needs.
//
// The draws are host and device functions: the CUDA target draws the
// initial weights where they live, and gets the host's bits
// (PortableMath.h says how).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_RANDOM_H
#define BITPIPE_RUNTIME_CORE_RANDOM_H

#include "core/PortableMath.h"

#include <cstdint>
#include <string_view>

namespace bitpipe::runtime {

BP_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// 64 random bits for (seed, stream, counter).
BP_HOST_DEVICE inline uint64_t randomBits(uint64_t seed, uint64_t stream,
                                          uint64_t counter) {
  return mix64(mix64(mix64(seed) ^ stream) ^ counter);
}

/// Uniform in [0, 1) with 53 random bits.
BP_HOST_DEVICE inline double randomUniform(uint64_t seed, uint64_t stream,
                                           uint64_t counter) {
  return static_cast<double>(randomBits(seed, stream, counter) >> 11) *
         (1.0 / 9007199254740992.0);
}

/// Uniform integer in [0, n), n > 0. The modulo bias is below n / 2^64.
BP_HOST_DEVICE inline uint64_t randomBelow(uint64_t seed, uint64_t stream,
                                           uint64_t counter, uint64_t n) {
  return randomBits(seed, stream, counter) % n;
}

/// Standard normal for (seed, stream, counter), by Box-Muller on two uniforms
/// drawn from counters 2*counter and 2*counter+1 of the same stream, with
/// PortableMath's log and cos: the same bits on host and device.
BP_HOST_DEVICE inline double randomNormal(uint64_t seed, uint64_t stream,
                                          uint64_t counter) {
  // 1 - u is exact (u is a multiple of 2^-53 in [0, 1), itself an exact
  // product, so a compiler that fuses the two gets the same) and in (0, 1],
  // so the log is finite; -2 * log is exact too.
  double u1 = 1.0 - randomUniform(seed, stream, 2 * counter);
  double u2 = randomUniform(seed, stream, 2 * counter + 1);
  return std::sqrt(-2.0 * portable::log(u1)) * portable::cos2Pi(u2);
}

/// FNV-1a: a stable 64-bit hash of a name (std::hash is not stable across
/// builds, and replicas may be different binaries).
inline uint64_t hashName(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_RANDOM_H
