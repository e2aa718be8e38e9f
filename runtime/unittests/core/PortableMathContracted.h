//===- PortableMathContracted.h - The draws with fused multiply-adds -*- C++
//-*-===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_CORE_PORTABLEMATHCONTRACTED_H
#define BITPIPE_RUNTIME_UNITTESTS_CORE_PORTABLEMATHCONTRACTED_H

#include <cstdint>

namespace bitpipe::runtime::contracted {

/// PortableMath.h's functions and the normal draw, from a translation unit
/// compiled with FMA contraction on (call only where the CPU has FMA).
double log(double x);
double cos2Pi(double u);
double normal(uint64_t seed, uint64_t stream, uint64_t counter);
/// An initial weight as train/Init.cpp and the CUDA kernel form it.
float initialWeight(double stddev, uint64_t seed, uint64_t stream,
                    uint64_t counter);

} // namespace bitpipe::runtime::contracted

#endif // BITPIPE_RUNTIME_UNITTESTS_CORE_PORTABLEMATHCONTRACTED_H
