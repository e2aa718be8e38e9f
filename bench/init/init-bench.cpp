//===- init-bench.cpp - The initial-weight draw against libm's
//-------------===//
//
// The normal draw of train/Init.h (core/PortableMath.h's log and cos, which
// host and device compute alike) against the same Box-Muller with libm's
// log and cos, side by side and alternating in one run: nanoseconds per
// element of each, their ratio, and how many of the floats differ (the
// portable functions are within 2 ulp of libm's in double, so the rounded
// floats should nearly always agree).
//
//   init-bench [ELEMENTS]   (default 20,000,000; 3 rounds)
//
//===----------------------------------------------------------------------===//

#include "core/Random.h"
#include "train/Init.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace bitpipe::runtime;

namespace {

/// The draw as it was before PortableMath: libm's log and cos.
void initNormalLibm(float *out, int64_t count, double stddev, uint64_t seed,
                    uint64_t stream) {
  for (int64_t i = 0; i < count; ++i) {
    double u1 = 1.0 - randomUniform(seed, stream, 2 * uint64_t(i));
    double u2 = randomUniform(seed, stream, 2 * uint64_t(i) + 1);
    out[i] = static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) *
                                std::cos(6.283185307179586 * u2));
  }
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

} // namespace

int main(int argc, char **argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 20000000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: init-bench [ELEMENTS > 0]\n");
    return 2;
  }
  std::vector<float> portable(n), libm(n);
  std::printf("initial-weight draw, %lld elements, one core\n",
              static_cast<long long>(n));
  std::printf("%-6s %14s %14s %7s %16s\n", "round", "portable ns", "libm ns",
              "ratio", "floats differing");
  for (int round = 1; round <= 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    initNormal(portable.data(), n, 0.02, 1234, "layers.0.mlp.fc.weight");
    double a = seconds(t0);
    t0 = std::chrono::steady_clock::now();
    initNormalLibm(libm.data(), n, 0.02, 1234,
                   hashName("layers.0.mlp.fc.weight"));
    double b = seconds(t0);
    int64_t differing = 0;
    for (int64_t i = 0; i < n; ++i)
      differing += portable[i] != libm[i];
    std::printf("%-6d %14.1f %14.1f %7.2f %16lld\n", round, a * 1e9 / n,
                b * 1e9 / n, a / b, static_cast<long long>(differing));
  }
  return 0;
}
