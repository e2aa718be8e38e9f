//===- CudaDropoutTest.cpp - The device dropout against the host mask -----===//
//
// bp_cuda_dropout (bf16) and bp_cuda_dropout_f32 against core/Dropout.h's
// mask drawn on the host, the one the CPU kernel (bp_dropout) applies:
// the same elements kept, fp32 values exactly x * scale, bf16 ones x *
// scale in fp32 rounded once, with the key read from device memory. Also
// the pattern ../cpu/DropoutTest.cpp computed from docs/training-semantics.md
// alone, counts that are not multiples of a pack, a warp or the block,
// pointers off the 16-byte alignment of the vector path (the elements just
// outside must keep their sentinels), in place, p == 0, and the argument
// checks.
//
// The argument checks run everywhere; the rest skips without a device, and
// bench/gpu/check.sh runs it on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "core/Dropout.h"

#include <array>
#include <limits>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

/// ../cpu/DropoutTest.cpp's kKnownPattern: seed 1234, sample group 7, site 5,
/// p = 0.25, bit e set when element e of 0..63 is kept, computed in Python
/// from docs/training-semantics.md (that file shows the lines).
constexpr uint64_t kKnownPattern = 0xfffb39dbdfff6effULL;

/// What the CPU kernel writes for x: core/Dropout.h's mask and scale, the
/// product in fp32.
std::vector<float> hostDropout(const std::vector<float> &x,
                               const std::array<int32_t, 4> &key, int32_t site,
                               float p) {
  const DropoutMask mask = dropoutMask(key.data(), site, p);
  std::vector<float> y(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    y[e] = p == 0.0f ? x[e] : mask.keeps(e) ? x[e] * mask.scale : 0.0f;
  return y;
}

std::array<int32_t, 4> keyOf(uint64_t seed, uint64_t g) {
  std::array<int32_t, 4> key;
  fillDropoutKey(seed, g, key.data());
  return key;
}

/// Runs the device kernel of one precision on \p x at \p shift elements into
/// a block with a sentinel on each side, out of place or in place, and
/// returns the n results (as floats); fails the test if a sentinel moved.
class DropoutRun {
public:
  DropoutRun(bool bf16, void *stream) : bf16_(bf16), stream_(stream) {}

  std::vector<float> operator()(const std::vector<float> &x,
                                const std::array<int32_t, 4> &key, int32_t site,
                                float p, int64_t shift, bool inPlace) {
    const int64_t n = static_cast<int64_t>(x.size());
    const float sentinel = 7.0f;
    std::vector<float> block(shift + n + 1, sentinel);
    std::copy(x.begin(), x.end(), block.begin() + shift);
    DeviceBuffer<int32_t> dKey(std::vector<int32_t>(key.begin(), key.end()));
    std::vector<float> out;
    if (bf16_) {
      DeviceBuffer<bp_bf16_t> dX(toBf16(block)), dY(toBf16(block));
      bp_bf16_t *in = dX.get() + shift;
      bp_bf16_t *res = inPlace ? in : dY.get() + shift;
      EXPECT_EQ(bp_cuda_dropout(in, res, dKey.get(), site, p, n, stream_),
                BP_OK);
      EXPECT_EQ(bp_cuda_synchronize(stream_), BP_OK);
      out = fromBf16(inPlace ? dX.download() : dY.download());
    } else {
      DeviceBuffer<float> dX(block), dY(block);
      float *in = dX.get() + shift;
      float *res = inPlace ? in : dY.get() + shift;
      EXPECT_EQ(bp_cuda_dropout_f32(in, res, dKey.get(), site, p, n, stream_),
                BP_OK);
      EXPECT_EQ(bp_cuda_synchronize(stream_), BP_OK);
      out = inPlace ? dX.download() : dY.download();
    }
    EXPECT_EQ(out[shift + n], sentinel) << "written past the end";
    if (shift > 0) {
      EXPECT_EQ(out[shift - 1], sentinel) << "written before the start";
    }
    return std::vector<float>(out.begin() + shift, out.begin() + shift + n);
  }

  /// The inputs as this precision holds them.
  std::vector<float> held(const std::vector<float> &x) const {
    return bf16_ ? fromBf16(toBf16(x)) : x;
  }
  /// The host result as this precision stores it (bf16: rounded once).
  std::vector<float> stored(const std::vector<float> &y) const {
    return bf16_ ? fromBf16(toBf16(y)) : y;
  }

private:
  bool bf16_;
  void *stream_;
};

/// Counts of elements where \p actual is not exactly \p expected.
int64_t mismatches(const std::vector<float> &actual,
                   const std::vector<float> &expected) {
  int64_t bad = 0;
  for (size_t e = 0; e < actual.size(); ++e)
    bad += !(actual[e] == expected[e]);
  return bad;
}

struct DropoutCase {
  int64_t n;
  int64_t shift; // Elements into the block: 0 takes the vector path.
};

void PrintTo(const DropoutCase &c, std::ostream *os) {
  *os << "n=" << c.n << " shift=" << c.shift;
}

class CudaDropout : public CudaTest,
                    public ::testing::WithParamInterface<DropoutCase> {};

TEST_P(CudaDropout, BothPrecisionsMatchTheHostMask) {
  const auto [n, shift] = GetParam();
  const auto key = keyOf(1234 + n, 40 + shift);
  const int32_t site = 3 * static_cast<int32_t>(shift) + 2;
  const float p = 0.3f;
  // Inputs never 0, so a 0 output is a dropped element.
  const auto x = randomFloats(n, static_cast<uint32_t>(n + shift), 0.5f, 2.0f);
  for (bool bf16 : {false, true}) {
    DropoutRun run(bf16, stream());
    const auto xs = run.held(x);
    const auto expected = run.stored(hostDropout(xs, key, site, p));
    for (bool inPlace : {false, true}) {
      const auto y = run(xs, key, site, p, shift, inPlace);
      EXPECT_EQ(mismatches(y, expected), 0)
          << (bf16 ? "bf16" : "fp32") << (inPlace ? ", in place" : "");
    }
  }
}

TEST_P(CudaDropout, ZeroProbabilityCopies) {
  const auto [n, shift] = GetParam();
  const auto key = keyOf(5, 6);
  const auto x = randomFloats(n, static_cast<uint32_t>(n), -2.0f, 2.0f);
  for (bool bf16 : {false, true}) {
    DropoutRun run(bf16, stream());
    const auto xs = run.held(x);
    for (bool inPlace : {false, true})
      EXPECT_EQ(mismatches(run(xs, key, 1, 0.0f, shift, inPlace), xs), 0)
          << (bf16 ? "bf16" : "fp32") << (inPlace ? ", in place" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, CudaDropout,
    ::testing::Values(DropoutCase{1, 0}, DropoutCase{7, 1}, DropoutCase{64, 0},
                      DropoutCase{255, 0}, DropoutCase{257, 3},
                      DropoutCase{1000, 0}, DropoutCase{4099, 5},
                      DropoutCase{65537, 0}, DropoutCase{300001, 1}));

using CudaDropoutPattern = CudaTest;

TEST_F(CudaDropoutPattern, IsTheDefinitions) {
  const int64_t n = 64;
  const float p = 0.25f, scale = 1.0f / (1.0f - p);
  const std::array<int32_t, 4> key = {1234, 0, 7, 0};
  const auto x = randomFloats(n, 9, 0.5f, 1.5f);
  for (bool bf16 : {false, true}) {
    DropoutRun run(bf16, stream());
    const auto xs = run.held(x);
    std::vector<float> expected(n);
    for (int64_t e = 0; e < n; ++e)
      expected[e] = (kKnownPattern >> e) & 1 ? xs[e] * scale : 0.0f;
    EXPECT_EQ(mismatches(run(xs, key, 5, p, 0, false), run.stored(expected)), 0)
        << (bf16 ? "bf16" : "fp32");
  }
}

// On the host, before anything is enqueued: these run without a device.
TEST(CudaDropoutArguments, BadArgumentsAreRejected) {
  // Never dereferenced: every call below is rejected first.
  bp_bf16_t *b = reinterpret_cast<bp_bf16_t *>(uintptr_t(256));
  float *f = reinterpret_cast<float *>(uintptr_t(256));
  int32_t *key = reinterpret_cast<int32_t *>(uintptr_t(256));
  for (float p : {1.0f, -0.1f, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_EQ(bp_cuda_dropout(b, b, key, 0, p, 4, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "p = " << p;
    EXPECT_EQ(bp_cuda_dropout_f32(f, f, key, 0, p, 4, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "p = " << p;
  }
  for (int32_t site : {-1, 1 << 24}) {
    EXPECT_EQ(bp_cuda_dropout(b, b, key, site, 0.5f, 4, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "site " << site;
    EXPECT_EQ(bp_cuda_dropout_f32(f, f, key, site, 0.5f, 4, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "site " << site;
  }
  EXPECT_EQ(bp_cuda_dropout(nullptr, b, key, 0, 0.5f, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_dropout(b, nullptr, key, 0, 0.5f, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_dropout_f32(f, f, nullptr, 0, 0.5f, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  for (int64_t n : {int64_t{0}, kDropoutMaxElements + 1}) {
    EXPECT_EQ(bp_cuda_dropout(b, b, key, 0, 0.5f, n, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "n = " << n;
    EXPECT_EQ(bp_cuda_dropout_f32(f, f, key, 0, 0.0f, n, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "n = " << n;
  }
}

} // namespace
