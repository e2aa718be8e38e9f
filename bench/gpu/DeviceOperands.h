//===- DeviceOperands.h - Device operands for the GPU benchmarks -*- C++
//-*-===//
//
// What the GPU benchmarks (block-bench.cpp, kernel-rates-cuda.cpp) share:
// operands from the device pool filled with random bf16 values (all-zero
// operands would make the tensor cores draw less power and run faster
// than in training) or zeroed fp32 accumulators, and the checks that name
// the failing call and end the program.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BENCH_GPU_DEVICEOPERANDS_H
#define BITPIPE_BENCH_GPU_DEVICEOPERANDS_H

#include "bitpipe/cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bitpipe::bench::gpu {

/// The program's name, for the messages below; main sets it.
inline const char *&programName() {
  static const char *name = "bitpipe-gpu";
  return name;
}

/// Prints "PROGRAM: WHAT: DETAIL" and exits with status 1.
[[noreturn]] inline void die(const char *what, const std::string &detail) {
  std::fprintf(stderr, "%s: %s: %s\n", programName(), what, detail.c_str());
  std::exit(1);
}

inline void cudaCheck(cudaError_t err, const char *what) {
  if (err != cudaSuccess)
    die(what,
        std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err));
}

/// Every kernel call goes through this: the first failure names the kernel.
inline void kernel(bp_status_t status, const char *name) {
  if (status != BP_OK)
    die(name, "returned status " + std::to_string(status));
}

/// fp32 -> bf16 bits, round to nearest even (finite inputs only).
inline bp_bf16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<bp_bf16_t>(bits >> 16);
}

/// A device tensor from the pool, filled from a repeating random pattern
/// (bf16) or zeros (fp32 accumulators).
class Buffers {
public:
  explicit Buffers(void *stream) : stream_(stream) {
    // A few MiB of uniform(-1, 1) bf16 values, copied round-robin into each
    // tensor at a scale: distinct enough for the hardware, cheap to make.
    pattern_.resize(size_t(1) << 21);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (bp_bf16_t &v : pattern_) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      float u = float(state >> 40) / float(1 << 24); // [0, 1)
      v = toBf16(2 * u - 1);
    }
  }
  ~Buffers() {
    for (void *p : owned_)
      bp_cuda_free(p, stream_);
  }

  /// n bf16 values, uniform in (-scale, scale).
  bp_bf16_t *bf16(int64_t n, float scale) {
    auto *p = static_cast<bp_bf16_t *>(alloc(n * int64_t(sizeof(bp_bf16_t))));
    std::vector<bp_bf16_t> scaled(pattern_.size());
    for (size_t i = 0; i < pattern_.size(); ++i) {
      uint32_t bits = uint32_t(pattern_[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      scaled[i] = toBf16(f * scale);
    }
    for (int64_t done = 0; done < n;) {
      int64_t count = std::min<int64_t>(n - done, int64_t(scaled.size()));
      cudaCheck(cudaMemcpy(p + done, scaled.data(),
                           size_t(count) * sizeof(bp_bf16_t),
                           cudaMemcpyHostToDevice),
                "cudaMemcpy (inputs)");
      done += count;
    }
    return p;
  }
  /// n bf16 values the benchmark writes before it reads them.
  bp_bf16_t *bf16Output(int64_t n) {
    return static_cast<bp_bf16_t *>(alloc(n * int64_t(sizeof(bp_bf16_t))));
  }
  /// n fp32 values, zero (accumulators) or written before read.
  float *f32(int64_t n) {
    auto *p = static_cast<float *>(alloc(n * int64_t(sizeof(float))));
    kernel(bp_cuda_fill_f32(p, 0.0f, n, stream_), "bp_cuda_fill_f32");
    return p;
  }

private:
  void *alloc(int64_t bytes) {
    void *p = bp_cuda_alloc(bytes, stream_);
    if (!p)
      die("bp_cuda_alloc", std::to_string(bytes) + " bytes");
    owned_.push_back(p);
    return p;
  }

  void *stream_;
  std::vector<bp_bf16_t> pattern_;
  std::vector<void *> owned_;
};

} // namespace bitpipe::bench::gpu

#endif // BITPIPE_BENCH_GPU_DEVICEOPERANDS_H
