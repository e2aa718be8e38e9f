//===- CudaOptimizerKernelsTest.cpp - Fills, casts, accumulation, AdamW ---===//
//
// bitpipe/cuda.h's "Casts, fills and the optimizer's kernels", each at sizes
// that are not multiples of 4, 16 or the block size, and through pointers
// that are and are not aligned for the kernels' 16-byte accesses (one
// element past an aligned block), so both the vector and the scalar path
// run. Elements around the written range must keep their sentinel values.
//
// What is exact, and why:
//  - fills, casts and accumulation are single IEEE operations per element:
//    bit-exact against the host (casts against an independent
//    round-to-nearest-even on the bits);
//  - bp_cuda_adamw_step is bit-exact against the CPU optimizer (the AdamW
//    class of runtime/lib/train, on the same data, with the per-step
//    constants formed as AdamW.cpp forms them): both sides perform the same
//    correctly rounded IEEE operations (multiply, add, divide, square root,
//    one double product rounded to float) in the same order with no fused
//    multiply-add (the device kernel uses explicitly rounded intrinsics; the
//    CPU build targets x86-64 without FMA) and no flush to zero, so the
//    results are the same bits, not merely within an ulp;
//  - bp_cuda_sum_squares adds in a different order than the CPU's one-by-one
//    loop, so it is compared to 1e-10 relative (the CPU's sequential fp64
//    sum of ~9e6 positive terms is itself good to about
//    sqrt(n) * 1.1e-16 = 3e-13 typically, n * 1.1e-16 = 1e-9 at worst), and
//    to itself bit for bit (its order is fixed).
//
// Skipped without a device, except the argument checks;
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "train/AdamW.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

using CudaOptimizerKernels = CudaTest;

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// Round to nearest even on the bits (independent of CUDA's conversion):
/// add 0x7FFF plus the lowest kept bit, then truncate. NaN stays NaN.
bp_bf16_t roundToBf16(float f) {
  uint32_t u = bitsOf(f);
  if (std::isnan(f))
    return static_cast<bp_bf16_t>((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<bp_bf16_t>(u >> 16);
}

bool isBf16NaN(bp_bf16_t b) {
  return (b & 0x7F80u) == 0x7F80u && (b & 0x007Fu) != 0;
}

/// Sizes and alignments every element-wise test runs at: the element count
/// and how many elements past an aligned block the data start.
struct SpanCase {
  int64_t n;
  int64_t shift;
};

void PrintTo(const SpanCase &c, std::ostream *os) {
  *os << "n=" << c.n << " shift=" << c.shift;
}

std::string spanName(const ::testing::TestParamInfo<SpanCase> &info) {
  return "n" + std::to_string(info.param.n) + "_shift" +
         std::to_string(info.param.shift);
}

const auto kSpans = ::testing::Values(
    SpanCase{1, 0}, SpanCase{3, 1}, SpanCase{4, 0}, SpanCase{4097, 0},
    SpanCase{4097, 1}, SpanCase{100003, 0}, SpanCase{100003, 3});

/// Sentinel elements on each side of the span: 4, so that with shift 0 the
/// span starts 16 bytes (fp32) or 8 bytes (bf16) into an aligned block, as
/// the kernels' vector accesses need.
constexpr int64_t kGuard = 4;

class CudaSpan : public CudaTest, public ::testing::WithParamInterface<SpanCase> {
protected:
  int64_t n() const { return GetParam().n; }
  /// Where the span starts in its buffer (whose block is aligned).
  int64_t begin() const { return kGuard + GetParam().shift; }
  int64_t total() const { return begin() + n() + kGuard; }
  std::string shape() const {
    return "n=" + std::to_string(n()) + ",shift=" + std::to_string(GetParam().shift);
  }
};

//===----------------------------------------------------------------------===//
// Fills
//===----------------------------------------------------------------------===//

using CudaFill = CudaSpan;

TEST_P(CudaFill, WritesTheValueAndNothingElse) {
  const float value = 0.1f; // Not a bf16: the bf16 fill rounds it.
  const float sentinel = -7.5f;
  DeviceBuffer<float> f32(std::vector<float>(total(), sentinel));
  const bp_bf16_t bf16Sentinel = roundToBf16(sentinel);
  DeviceBuffer<bp_bf16_t> b16(std::vector<bp_bf16_t>(total(), bf16Sentinel));
  ASSERT_EQ(bp_cuda_fill_f32(f32.get() + begin(), value, n(), stream()), BP_OK);
  ASSERT_EQ(bp_cuda_fill_bf16(b16.get() + begin(), value, n(), stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto f = f32.download();
  auto b = b16.download();
  int64_t wrong = 0;
  for (int64_t i = 0; i < total(); ++i) {
    const bool inside = i >= begin() && i < begin() + n();
    wrong += bitsOf(f[i]) != bitsOf(inside ? value : sentinel);
    wrong += b[i] != (inside ? roundToBf16(value) : bf16Sentinel);
  }
  EXPECT_EQ(wrong, 0) << shape();
}

INSTANTIATE_TEST_SUITE_P(Spans, CudaFill, kSpans, spanName);

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

/// Values that test the rounding: exact ties (both directions of "to
/// even"), just above and below a tie, zeros, infinities, NaN, the largest
/// float (rounds up to infinity), subnormals; the rest random over many
/// binades.
std::vector<float> castInputs(int64_t n, uint32_t seed) {
  auto fromBits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  };
  const std::vector<float> special = {
      fromBits(0x3F808000u), fromBits(0x3F818000u), fromBits(0xBF808000u),
      fromBits(0x3F808001u), fromBits(0x3F807FFFu), 0.0f, -0.0f,
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
      fromBits(0x00018000u), 1.0f, -3.0f};
  auto r = randomFloats(n, seed, -1.0f, 1.0f);
  auto e = randomInts(n, seed + 1, -60, 60);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i < static_cast<int64_t>(special.size()) ? special[i]
                                                    : std::ldexp(r[i], e[i]);
  return v;
}

using CudaCast = CudaSpan;

TEST_P(CudaCast, RoundsToNearestEvenAndWidensExactly) {
  auto in = castInputs(n(), static_cast<uint32_t>(n()));
  std::vector<float> inPadded(total(), 0.0f);
  std::copy(in.begin(), in.end(), inPadded.begin() + begin());
  const bp_bf16_t sentinel = 0x1234;
  DeviceBuffer<float> dIn(inPadded);
  DeviceBuffer<bp_bf16_t> dOut(std::vector<bp_bf16_t>(total(), sentinel));
  ASSERT_EQ(bp_cuda_cast_f32_to_bf16(dIn.get() + begin(), dOut.get() + begin(),
                                     n(), stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto out = dOut.download();
  int64_t wrong = 0;
  for (int64_t i = 0; i < total(); ++i) {
    const int64_t k = i - begin();
    if (k < 0 || k >= n())
      wrong += out[i] != sentinel;
    else if (std::isnan(in[k]))
      wrong += !isBf16NaN(out[i]);
    else
      wrong += out[i] != roundToBf16(in[k]);
  }
  EXPECT_EQ(wrong, 0) << "f32 -> bf16, " << shape();

  // Back: bf16 -> f32 is exact (the bits shifted up), on the values just
  // made.
  DeviceBuffer<float> dBack(std::vector<float>(total(), 5.0f));
  ASSERT_EQ(bp_cuda_cast_bf16_to_f32(dOut.get() + begin(), dBack.get() + begin(),
                                     n(), stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto back = dBack.download();
  wrong = 0;
  for (int64_t i = 0; i < total(); ++i) {
    const int64_t k = i - begin();
    if (k < 0 || k >= n())
      wrong += back[i] != 5.0f;
    else if (std::isnan(in[k]))
      wrong += !std::isnan(back[i]);
    else
      wrong += bitsOf(back[i]) != static_cast<uint32_t>(out[i]) << 16;
  }
  EXPECT_EQ(wrong, 0) << "bf16 -> f32, " << shape();
}

INSTANTIATE_TEST_SUITE_P(Spans, CudaCast, kSpans, spanName);

//===----------------------------------------------------------------------===//
// Accumulation
//===----------------------------------------------------------------------===//

using CudaAccumulate = CudaSpan;

TEST_P(CudaAccumulate, AddsInFp32) {
  const uint32_t seed = static_cast<uint32_t>(n() * 3 + GetParam().shift);
  auto acc = randomFloats(total(), seed, -2.0f, 2.0f);
  auto g = randomFloats(total(), seed + 1, -1e-3f, 1e-3f);
  DeviceBuffer<float> dAcc(acc), dG(g);
  ASSERT_EQ(bp_cuda_accumulate_f32(dAcc.get() + begin(), dG.get() + begin(),
                                   n(), stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto out = dAcc.download();
  int64_t wrong = 0;
  for (int64_t i = 0; i < total(); ++i) {
    const bool inside = i >= begin() && i < begin() + n();
    const float expected = inside ? acc[i] + g[i] : acc[i];
    wrong += bitsOf(out[i]) != bitsOf(expected);
  }
  EXPECT_EQ(wrong, 0) << shape();
}

INSTANTIATE_TEST_SUITE_P(Spans, CudaAccumulate, kSpans, spanName);

//===----------------------------------------------------------------------===//
// The optimizer: segments over flat arrays.
//===----------------------------------------------------------------------===//

/// Flat parameter-store arrays cut into segments: offsets that are and are
/// not multiples of 4, a segment of one element, sizes around the kernels'
/// 4096-element chunk, an empty segment, gaps that no segment covers (which
/// must be left alone), more segments than the chunk table's 1024 threads
/// (so each thread scans several), and one segment of more chunks than the
/// kernels' fixed grid has blocks (so blocks take several chunks).
struct Layout {
  std::vector<bp_cuda_segment> segments;
  int64_t total = 0;
};

Layout makeLayout() {
  struct Piece {
    int64_t gapBefore, count;
    bool decay;
  };
  std::vector<Piece> pieces = {{0, 4096 * 3 + 5, true}, {0, 7, false},
                               {0, 1, true},            {5, 5000, false},
                               {3, 0, true},            {1, 4096, true},
                               {0, 100003, true},       {2, 33, false}};
  for (int k = 0; k < 2500; ++k) // Small tensors: biases, gains.
    pieces.push_back({k % 3 == 0 ? 1 : 0, 1 + k % 9, k % 2 == 0});
  pieces.push_back({0, 2 * 1056 * 4096 + 1001, true}); // An embedding.
  Layout l;
  for (const Piece &p : pieces) {
    l.total += p.gapBefore;
    l.segments.push_back(
        {l.total, p.count, l.total, l.total, p.decay ? 1 : 0, 0});
    l.total += p.count;
  }
  l.total += 4; // A gap at the end too.
  return l;
}

/// The CPU optimizer's view of the same arrays (segments with elements only:
/// AdamWParam needs at least one).
std::vector<AdamWParam> cpuParams(const Layout &l, float *p, const double *g,
                                  float *m, float *v) {
  std::vector<AdamWParam> params;
  for (size_t k = 0; k < l.segments.size(); ++k) {
    const bp_cuda_segment &s = l.segments[k];
    if (s.count == 0)
      continue;
    params.push_back({"segment" + std::to_string(k), p + s.offset,
                      g + s.offset, m + s.offset, v + s.offset, s.count,
                      s.decay != 0});
  }
  return params;
}

/// The per-step constants exactly as AdamW::stepWithGlobalNorm forms them
/// (runtime/lib/train/AdamW.cpp), for step t with the clip factor it chose.
bp_cuda_adamw_constants cpuConstants(const AdamWConfig &c, int64_t t,
                                     double clipScale, int microBatches) {
  bp_cuda_adamw_constants k;
  k.grad_scale = clipScale / microBatches;
  k.beta1 = static_cast<float>(c.beta1);
  k.beta2 = static_cast<float>(c.beta2);
  k.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  k.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  k.eps = static_cast<float>(c.eps);
  const double td = static_cast<double>(t);
  k.step_size = static_cast<float>(c.lr / (1.0 - std::pow(c.beta1, td)));
  k.root_bc2 = static_cast<float>(std::sqrt(1.0 - std::pow(c.beta2, td)));
  k.decay_factor = static_cast<float>(1.0 - c.lr * c.weightDecay);
  return k;
}

/// Gradients with a spread of magnitudes, exact zeros and values whose
/// squares are subnormal in fp32 (v's update must agree there too).
std::vector<float> optimizerGrads(int64_t n, uint32_t seed) {
  auto g = randomFloats(n, seed, -1.0f, 1.0f);
  auto e = randomInts(n, seed + 1, -24, 4);
  for (int64_t i = 0; i < n; ++i)
    g[i] = i % 97 == 0 ? 0.0f : i % 89 == 0 ? 1e-22f : std::ldexp(g[i], e[i]);
  return g;
}

struct AdamWCase {
  bool bf16Copy;
  int64_t shift; // Elements past an aligned block where the arrays start.
};

void PrintTo(const AdamWCase &c, std::ostream *os) {
  *os << "bf16Copy=" << c.bf16Copy << " shift=" << c.shift;
}

class CudaAdamW : public CudaTest,
                  public ::testing::WithParamInterface<AdamWCase> {};

TEST_P(CudaAdamW, StepsAreBitExactWithTheCpuOptimizer) {
  const auto [bf16Copy, shift] = GetParam();
  const Layout l = makeLayout();
  const int64_t n = l.total, padded = n + shift;
  const int micro = 3;
  AdamWConfig config;
  config.lr = 3e-3;
  config.weightDecay = 0.1;
  config.maxGradNorm = 1.0; // Small enough to clip: the clip factor is used.
  AdamW cpu(config);

  // Host state; the gaps hold sentinels the device must not touch.
  std::vector<float> p = randomFloats(n, 11, -0.5f, 0.5f);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  std::vector<double> gD(n);
  auto params = cpuParams(l, p.data(), gD.data(), m.data(), v.data());

  auto pad = [&](const std::vector<float> &a) {
    std::vector<float> out(padded, -9.0f);
    std::copy(a.begin(), a.end(), out.begin() + shift);
    return out;
  };
  DeviceBuffer<float> dP(pad(p)), dM(pad(m)), dV(pad(v)), dG(padded);
  DeviceBuffer<bp_bf16_t> dPb(std::vector<bp_bf16_t>(padded, 0x4321));
  DeviceBuffer<bp_cuda_segment> dSeg(l.segments);
  std::vector<bool> covered(n, false);
  for (const auto &s : l.segments)
    for (int64_t i = 0; i < s.count; ++i)
      covered[s.offset + i] = true;

  for (int64_t step = 1; step <= 3; ++step) {
    auto g = optimizerGrads(n, static_cast<uint32_t>(100 + step));
    for (int64_t i = 0; i < n; ++i)
      gD[i] = g[i];
    dG.upload(pad(g));
    Expected<double> sumSq = AdamW::sumSquaredGradients(params, micro);
    ASSERT_TRUE(sumSq.isOk());
    AdamWStepInfo info;
    ASSERT_TRUE(cpu.stepWithGlobalNorm(params, micro, *sumSq, &info).isOk());
    ASSERT_LT(info.clipScale, 1.0) << "the test means to clip";
    const bp_cuda_adamw_constants c =
        cpuConstants(config, cpu.stepCount(), info.clipScale, micro);
    ASSERT_EQ(bp_cuda_adamw_step(dP.get() + shift, dG.get() + shift,
                                 dM.get() + shift, dV.get() + shift,
                                 bf16Copy ? dPb.get() + shift : nullptr,
                                 dSeg.get(),
                                 static_cast<int32_t>(l.segments.size()), &c,
                                 stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

    auto gotP = dP.download(), gotM = dM.download(), gotV = dV.download();
    auto gotB = dPb.download();
    int64_t wrongP = 0, wrongM = 0, wrongV = 0, wrongB = 0, firstWrong = -1;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t d = i + shift;
      // Gaps keep their initial values: p as uploaded, m = v = 0.
      const bool badP = bitsOf(gotP[d]) != bitsOf(p[i]);
      const bool badM = bitsOf(gotM[d]) != bitsOf(m[i]);
      const bool badV = bitsOf(gotV[d]) != bitsOf(v[i]);
      const bp_bf16_t wantB =
          bf16Copy && covered[i] ? roundToBf16(p[i]) : bp_bf16_t(0x4321);
      const bool badB = gotB[d] != wantB;
      wrongP += badP;
      wrongM += badM;
      wrongV += badV;
      wrongB += badB;
      if ((badP || badM || badV || badB) && firstWrong < 0)
        firstWrong = i;
    }
    EXPECT_EQ(wrongP + wrongM + wrongV + wrongB, 0)
        << "step " << step << ": " << wrongP << " params, " << wrongM
        << " m, " << wrongV << " v, " << wrongB
        << " bf16 copies differ from the CPU optimizer's; first at element "
        << firstWrong << " (cpu p " << (firstWrong >= 0 ? p[firstWrong] : 0.0f)
        << ", device p "
        << (firstWrong >= 0 ? gotP[firstWrong + shift] : 0.0f) << ")";
    // One line of check.sh's table. Bit-exact: the error column counts the
    // differing elements, against a tolerance of 0.
    const int64_t wrong = wrongP + wrongM + wrongV + wrongB;
    std::printf("BPCHECK adamw_step params,m,v%s step=%lld,shift=%lld %.3e "
                "%.1e %s\n",
                bf16Copy ? ",bf16" : "", static_cast<long long>(step),
                static_cast<long long>(shift), static_cast<double>(wrong), 0.0,
                wrong == 0 ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaAdamW,
                         ::testing::Values(AdamWCase{true, 0},
                                           AdamWCase{false, 0},
                                           AdamWCase{true, 1},
                                           AdamWCase{false, 2}),
                         [](const auto &info) {
                           return std::string(info.param.bf16Copy
                                                  ? "WithBf16Copy"
                                                  : "Fp32Only") +
                                  "_shift" + std::to_string(info.param.shift);
                         });

//===----------------------------------------------------------------------===//
// Sum of squares
//===----------------------------------------------------------------------===//

class CudaSumSquares : public CudaTest,
                       public ::testing::WithParamInterface<int64_t> {};

TEST_P(CudaSumSquares, MatchesTheCpuAndIsDeterministic) {
  const int64_t shift = GetParam();
  const Layout l = makeLayout();
  const int64_t n = l.total;
  const int micro = 4;
  auto g = optimizerGrads(n, 7);
  // Large values in the gaps: summing them by mistake would show.
  std::vector<float> padded(n + shift, 1e6f);
  std::vector<double> gD(n);
  std::vector<float> unusedP(n), unusedM(n), unusedV(n);
  for (const auto &s : l.segments)
    for (int64_t i = s.offset; i < s.offset + s.count; ++i) {
      padded[i + shift] = g[i];
      gD[i] = g[i];
    }
  auto params =
      cpuParams(l, unusedP.data(), gD.data(), unusedM.data(), unusedV.data());
  Expected<double> expected = AdamW::sumSquaredGradients(params, micro);
  ASSERT_TRUE(expected.isOk());

  DeviceBuffer<float> dG(padded);
  DeviceBuffer<bp_cuda_segment> dSeg(l.segments);
  DeviceBuffer<double> dOut(2);
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(bp_cuda_sum_squares(dG.get() + shift, dSeg.get(),
                                  static_cast<int32_t>(l.segments.size()),
                                  1.0 / micro, dOut.get() + run, stream()),
              BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto out = dOut.download();
  const std::string shape = "n=" + std::to_string(n) + ",segments=" +
                            std::to_string(l.segments.size()) + ",shift=" +
                            std::to_string(shift);
  EXPECT_TRUE(checkClose("sum_squares", "sum", shape,
                         std::vector<double>{out[0]}, {*expected}, 1e-10));
  EXPECT_EQ(std::memcmp(&out[0], &out[1], sizeof(double)), 0)
      << "two runs: " << out[0] << " and " << out[1];
}

INSTANTIATE_TEST_SUITE_P(Shifts, CudaSumSquares,
                         ::testing::Values(int64_t{0}, int64_t{1}),
                         [](const auto &info) {
                           return "shift" + std::to_string(info.param);
                         });

TEST_F(CudaOptimizerKernels, MalformedSegmentsAreReportedAndSkipped) {
  // The segment table is device memory: checked there, reported by
  // bp_cuda_synchronize, the other segments still done.
  std::vector<float> g = {1.0f, 2.0f, 3.0f, 4.0f};
  // offset, count, master, moment, decay, reserved: a good one, then a
  // negative count, offset, master and moment, and a reserved field set.
  std::vector<bp_cuda_segment> segs = {
      {0, 2, 0, 0, 1, 0},  {2, -1, 2, 2, 1, 0}, {-4, 2, -4, -4, 1, 0},
      {2, 1, -1, 2, 1, 0}, {2, 1, 2, -3, 1, 0}, {2, 1, 2, 2, 0, 7}};
  DeviceBuffer<float> dG(g);
  DeviceBuffer<bp_cuda_segment> dSeg(segs);
  DeviceBuffer<double> dOut(1);
  const int32_t numSegs = static_cast<int32_t>(segs.size());
  ASSERT_EQ(bp_cuda_sum_squares(dG.get(), dSeg.get(), numSegs, 1.0, dOut.get(),
                                stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(dOut.download()[0], 5.0); // 1 + 4: the first segment only.

  DeviceBuffer<float> dP(g), dM(std::vector<float>(4, 0.0f)),
      dV(std::vector<float>(4, 0.0f));
  AdamWConfig config;
  const bp_cuda_adamw_constants c = cpuConstants(config, 1, 1.0, 1);
  ASSERT_EQ(bp_cuda_adamw_step(dP.get(), dG.get(), dM.get(), dV.get(), nullptr,
                               dSeg.get(), numSegs, &c, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  auto p = dP.download();
  EXPECT_NE(p[0], 1.0f); // Updated.
  EXPECT_EQ(p[2], 3.0f); // Only in malformed segments: untouched.
  EXPECT_EQ(p[3], 4.0f);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_OK) << "the record is cleared";
}

//===----------------------------------------------------------------------===//
// Argument checks: on the host, so these run without a device too.
//===----------------------------------------------------------------------===//

TEST(CudaOptimizerArguments, NullPointersAndNonPositiveSizesAreRejected) {
  float *f = reinterpret_cast<float *>(uintptr_t(256));
  bp_bf16_t *b = reinterpret_cast<bp_bf16_t *>(uintptr_t(256));
  double *d = reinterpret_cast<double *>(uintptr_t(256));
  auto *seg = reinterpret_cast<bp_cuda_segment *>(uintptr_t(256));
  bp_cuda_adamw_constants c{};
  EXPECT_EQ(bp_cuda_fill_f32(nullptr, 0.0f, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_fill_bf16(b, 0.0f, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_cast_f32_to_bf16(f, nullptr, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_cast_bf16_to_f32(b, f, -1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_accumulate_f32(f, nullptr, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_sum_squares(f, seg, 0, 1.0, d, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_sum_squares(f, nullptr, 3, 1.0, d, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_adamw_step(f, f, f, f, nullptr, seg, 3, nullptr, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_adamw_step(f, f, nullptr, f, b, seg, 3, &c, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_adamw_step(f, f, f, f, b, seg, -1, &c, nullptr),
            BP_ERR_INVALID_ARGUMENT);
}

} // namespace
