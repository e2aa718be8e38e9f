//===- Dropout.h - The dropout mask, on host and device ---------*- C++ -*-===//
//
// Whether dropout keeps an element is a pure function of the training seed,
// the micro-batch's sample group g, the dropout site and the element's
// index (docs/training-semantics.md, "Dropout"): no generator state, so a
// recomputed backward, another rank or another schedule draws the same mask,
// and the float64 reference can draw it without sharing code with us.
//
// The kernels get the (seed, g) pair as a micro-batch's random key: four
// int32 words [seed low, seed high, g low, g high] (the RNG_KEY role of
// bitpipe/abi/KernelRoles.h), which the runtime fills for each micro-batch.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_DROPOUT_H
#define BITPIPE_RUNTIME_CORE_DROPOUT_H

#include "bitpipe/abi/Dropout.h"
#include "core/Random.h"

#include <cstdint>

namespace bitpipe::runtime {

/// The ABI's numbers (bitpipe/abi/Dropout.h): sites and element indices
/// share the 64-bit counter, site * 2^40 + e.
inline constexpr uint64_t kDropoutStream = BP_DROPOUT_STREAM;
inline constexpr int kDropoutSiteShift = BP_DROPOUT_SITE_SHIFT;
inline constexpr int64_t kDropoutMaxSites = BP_DROPOUT_MAX_SITES;
inline constexpr int64_t kDropoutMaxElements = int64_t{1} << kDropoutSiteShift;

/// A random key is this many int32 words (the RNG_KEY role's buffer).
inline constexpr int kDropoutKeyWords = 4;

/// The words of a random key, and back.
BP_HOST_DEVICE inline uint64_t joinKeyWords(int32_t low, int32_t high) {
  return static_cast<uint64_t>(static_cast<uint32_t>(low)) |
         static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32;
}
inline void fillDropoutKey(uint64_t seed, uint64_t sampleGroup,
                           int32_t key[4]) {
  key[0] = static_cast<int32_t>(static_cast<uint32_t>(seed));
  key[1] = static_cast<int32_t>(static_cast<uint32_t>(seed >> 32));
  key[2] = static_cast<int32_t>(static_cast<uint32_t>(sampleGroup));
  key[3] = static_cast<int32_t>(static_cast<uint32_t>(sampleGroup >> 32));
}

/// Whether (key, site, p) is a mask the kernels can draw: p in [0, 1), a
/// site below 2^24. Elements must be below 2^40 as well (the caller's size).
BP_HOST_DEVICE inline bool dropoutArgsValid(int32_t site, float p) {
  return p >= 0.0f && p < 1.0f && site >= 0 && site < kDropoutMaxSites;
}

/// One site's mask for one micro-batch. Element e is kept when
/// uniform(seed, D ^ mix64(g), site * 2^40 + e) >= p, with uniform the
/// top 53 bits over 2^53 as Random.h's; that compare is done on the
/// integers, against ceil(p * 2^53) (p * 2^53 is exact in double), so
/// host and device agree to the bit. Kept elements are scaled by
/// 1 / (1 - p), computed in fp32.
struct DropoutMask {
  uint64_t base;      // mix64(mix64(seed) ^ stream): randomBits' first half
  uint64_t site;      // site * 2^40
  uint64_t threshold; // ceil(p * 2^53)
  float scale;

  BP_HOST_DEVICE bool keeps(uint64_t element) const {
    return (mix64(base ^ (site | element)) >> 11) >= threshold;
  }
};

BP_HOST_DEVICE inline DropoutMask dropoutMask(const int32_t *key,
                                              int32_t site, float p) {
  uint64_t seed = joinKeyWords(key[0], key[1]);
  uint64_t group = joinKeyWords(key[2], key[3]);
  DropoutMask m;
  m.base = mix64(mix64(seed) ^ (kDropoutStream ^ mix64(group)));
  m.site = static_cast<uint64_t>(site) << kDropoutSiteShift;
  m.threshold =
      static_cast<uint64_t>(ceil(static_cast<double>(p) * 9007199254740992.0));
  m.scale = 1.0f / (1.0f - p);
  return m;
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_DROPOUT_H
