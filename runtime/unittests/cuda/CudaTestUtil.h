//===- CudaTestUtil.h - Devices and buffers for the tests -------*- C++ -*-===//
//
// Test-only. The fixture that skips a test on machines without a GPU (where
// this project is mostly built), device buffers from the pool that start
// poisoned, bf16 conversions on the host, and the check that both asserts
// and prints one line of bench/gpu/check-kernels.sh's table.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_CUDA_CUDATESTUTIL_H
#define BITPIPE_RUNTIME_UNITTESTS_CUDA_CUDATESTUTIL_H

#include "TestUtil.h"
#include "bitpipe/cuda.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace bitpipe::runtime::test {

//===----------------------------------------------------------------------===//
// Tolerances. The reference sees exactly the bf16-rounded inputs the kernel
// sees, so the differences are the kernel's fp32 arithmetic (~1e-6
// relative) and, for bf16 outputs, the final rounding (half an ulp, 2^-9 =
// 2e-3 relative, one ulp 3.9e-3 if the fp32 value sat next to a tie).
// Element-wise as allClose: |err| <= rtol (|expected| + 0.1 max|expected|).
//===----------------------------------------------------------------------===//

/// bf16 outputs (activations, activation gradients).
inline constexpr double kBf16Rtol = 1e-2;
/// fp32 outputs computed from bf16 inputs: statistics, losses, accumulated
/// parameter gradients (the CPU kernels' gradient tolerance).
inline constexpr double kFp32Rtol = 1e-3;

//===----------------------------------------------------------------------===//
// The device.
//===----------------------------------------------------------------------===//

/// Why the CUDA tests cannot run here, or empty if they can.
inline const std::string &noDeviceReason() {
  static const std::string reason = [] {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
      return std::string("no usable CUDA device: cudaGetDeviceCount failed (") +
             cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")";
    if (count == 0)
      return std::string("no CUDA device: cudaGetDeviceCount returned 0");
    return std::string();
  }();
  return reason;
}

/// The stream every test enqueues on: non-blocking, so a kernel that ignored
/// its stream argument (and ran on the legacy default stream) would race
/// with the copies and show up. Never destroyed: the pool keys free lists by
/// stream handle.
inline void *testStream() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
      s = nullptr;
    return s;
  }();
  return stream;
}

/// Skips each test, with the reason, when there is no device.
class CudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!noDeviceReason().empty())
      GTEST_SKIP() << noDeviceReason();
    ASSERT_NE(testStream(), nullptr) << "could not create a CUDA stream";
  }
  void *stream() const { return testStream(); }
};

#define BP_CUDA_OK(expr)                                                       \
  do {                                                                         \
    cudaError_t bpErr = (expr);                                                \
    ASSERT_EQ(bpErr, cudaSuccess) << #expr << ": " << cudaGetErrorString(bpErr); \
  } while (0)

//===----------------------------------------------------------------------===//
// Buffers.
//===----------------------------------------------------------------------===//

/// A device array from the pool, on the test stream. It starts poisoned with
/// 0xFF bytes, which are NaN as fp32 and as bf16 (and -1 as int32): a kernel
/// that skips part of an output it should write leaves NaN there, even when
/// the pool hands back a block that still holds a previous test's correct
/// results.
template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t count)
      : count_(count), data_(static_cast<T *>(bp_cuda_alloc(
                           static_cast<int64_t>(count * sizeof(T)),
                           testStream()))) {
    EXPECT_NE(data_, nullptr) << "bp_cuda_alloc(" << count * sizeof(T) << ")";
    if (data_) {
      EXPECT_EQ(cudaMemsetAsync(data_, 0xFF, count * sizeof(T),
                                static_cast<cudaStream_t>(testStream())),
                cudaSuccess);
    }
  }
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size()) {
    upload(host);
  }
  ~DeviceBuffer() { bp_cuda_free(data_, testStream()); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  T *get() const { return data_; }
  size_t size() const { return count_; }

  void upload(const std::vector<T> &host) {
    ASSERT_EQ(host.size(), count_);
    auto s = static_cast<cudaStream_t>(testStream());
    BP_CUDA_OK(cudaMemcpyAsync(data_, host.data(), count_ * sizeof(T),
                               cudaMemcpyHostToDevice, s));
    BP_CUDA_OK(cudaStreamSynchronize(s));
  }

  /// Waits for the test stream, so the kernels before it have finished.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    auto s = static_cast<cudaStream_t>(testStream());
    EXPECT_EQ(cudaMemcpyAsync(host.data(), data_, count_ * sizeof(T),
                              cudaMemcpyDeviceToHost, s),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    return host;
  }

private:
  size_t count_;
  T *data_;
};

//===----------------------------------------------------------------------===//
// bf16 on the host, with CUDA's own conversions (round to nearest even).
//===----------------------------------------------------------------------===//

inline std::vector<bp_bf16_t> toBf16(const std::vector<float> &v) {
  std::vector<bp_bf16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    __nv_bfloat16 b = __float2bfloat16_rn(v[i]);
    std::memcpy(&out[i], &b, sizeof(b));
  }
  return out;
}

inline std::vector<float> fromBf16(const std::vector<bp_bf16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    __nv_bfloat16 b;
    std::memcpy(&b, &v[i], sizeof(b));
    out[i] = __bfloat162float(b);
  }
  return out;
}

/// Uniform random values already rounded to bf16: what the kernel reads
/// and what the double reference computes from are the same numbers.
inline std::vector<float> randomBf16Values(int64_t n, uint32_t seed,
                                           float lo = -1.0f, float hi = 1.0f) {
  return fromBf16(toBf16(randomFloats(n, seed, lo, hi)));
}

//===----------------------------------------------------------------------===//
// Checks.
//===----------------------------------------------------------------------===//

/// allClose, plus one line for bench/gpu/check-kernels.sh's table:
///   BPCHECK <kernel> <tensor> <shape> <max normalized error> <rtol> PASS|FAIL
template <typename A>
::testing::AssertionResult checkClose(const char *kernel, const char *tensor,
                                      const std::string &shape,
                                      const std::vector<A> &actual,
                                      const std::vector<double> &expected,
                                      double rtol) {
  ::testing::AssertionResult ok = allClose(actual, expected, rtol);
  std::printf("BPCHECK %s %s %s %.3e %.1e %s\n", kernel, tensor, shape.c_str(),
              maxNormalizedError(actual, expected), rtol,
              ok ? "PASS" : "FAIL");
  std::fflush(stdout);
  if (!ok)
    ok << " [" << kernel << " " << tensor << " " << shape << "]";
  return ok;
}

inline std::vector<double> plus(const std::vector<float> &a,
                                const std::vector<double> &b) {
  std::vector<double> r(b);
  for (size_t i = 0; i < r.size(); ++i)
    r[i] += a[i];
  return r;
}

} // namespace bitpipe::runtime::test

#endif // BITPIPE_RUNTIME_UNITTESTS_CUDA_CUDATESTUTIL_H
