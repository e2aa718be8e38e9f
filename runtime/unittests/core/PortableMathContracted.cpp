//===- PortableMathContracted.cpp - The draws with fused multiply-adds ----===//
//
// Compiled with every multiply-add the compiler may fuse fused
// (-ffp-contract=fast -mfma, CMakeLists.txt), as nvcc compiles device code;
// PortableMathTest.cpp is compiled with none fused. Equal results show that
// PortableMath.h leaves no expression whose rounding depends on contraction.
//
//===----------------------------------------------------------------------===//

#include "PortableMathContracted.h"

#include "core/Random.h"

namespace bitpipe::runtime::contracted {

double log(double x) { return portable::log(x); }
double cos2Pi(double u) { return portable::cos2Pi(u); }
double normal(uint64_t seed, uint64_t stream, uint64_t counter) {
  return randomNormal(seed, stream, counter);
}
float initialWeight(double stddev, uint64_t seed, uint64_t stream,
                    uint64_t counter) {
  return static_cast<float>(stddev * randomNormal(seed, stream, counter));
}

} // namespace bitpipe::runtime::contracted
