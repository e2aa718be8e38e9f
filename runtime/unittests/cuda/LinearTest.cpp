//===- LinearTest.cpp - cuBLASLt linear layers against the double reference
//===//
//
// Every bp_cuda_linear* function of bitpipe/cuda.h, in bf16 and in fp32,
// against float64 loops, at shapes that are and are not multiples of 8 or 16
// (where cuBLASLt's GELU epilogues are not valid), N = 1, long reductions
// (K = 8192 along In, Out and N in turn), with and without a bias, with the
// epilogues fused where valid and with them switched off (so that both of
// Linear.cpp's paths run on every device). Accumulated outputs (dw, db)
// start from random values; written ones start as NaN.
//
// Tolerances (allClose's: |err| <= rtol (|expected| + 0.1 max|expected|)):
//  - bf16 outputs, kBf16Rtol = 1e-2: the reference reads the same
//    bf16-rounded inputs, so what remains is fp32 accumulation (~1e-6) and
//    rounding the output to bf16 (2^-9 relative), twice on the unfused
//    paths (the product, then the bias or GELU step): at most ~4e-3.
//  - fp32 outputs (every output of the _f32 variants, and dw, db in both),
//    kProductRtol = 1e-4: true fp32 accumulation over K terms of size ~1/3
//    errs by about 2^-24 K / 4 in absolute terms (1.2e-4 at K = 8192) against
//    a floor of 1e-4 x 0.1 max|expected| (~1.2e-3 there). TF32 products
//    (10-bit mantissas) would err by ~2^-11 sqrt(K) / 3, over 10 times that
//    floor at K = 8192, so the fp32 cases fail if TF32 is ever used.
// GELU's tail test holds the bf16 epilogues to the tanh form with no floor
// where the erf form differs from it by 3% to 30%.
//
// Every test skips itself without a device except the argument checks.
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "Reference.h"
#include "cuda/linear/EpiloguePolicy.h"

#include "bitpipe/program.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <type_traits>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;
namespace linear = bitpipe::runtime::cuda::linear;

// runtime.h's fused entry points (see runtime/lib/cuda/abi/Linear.cpp):
// declared here until runtime.h has them.
extern "C" {
bp_status_t bp_linear_gelu_fwd(const float *x, const float *w, const float *b,
                               float *y, float *pre, int64_t N, int64_t In,
                               int64_t Out);
bp_status_t bp_linear_bwd_input_gelu(const float *dy, const float *w,
                                     const float *pre, float *dx, int64_t N,
                                     int64_t In, int64_t Out);
}

namespace {

constexpr double kProductRtol = 1e-4;

//===----------------------------------------------------------------------===//
// The two element types behind one spelling.
//===----------------------------------------------------------------------===//

template <typename T> constexpr bool kIsBf16 = std::is_same_v<T, bp_bf16_t>;

template <typename T> double outputRtol() {
  return kIsBf16<T> ? kBf16Rtol : kProductRtol;
}

/// Random inputs that T holds exactly (bf16-rounded for bf16).
template <typename T>
std::vector<float> inputs(int64_t n, uint32_t seed, float lo = -1.0f,
                          float hi = 1.0f) {
  return kIsBf16<T> ? randomBf16Values(n, seed, lo, hi)
                    : randomFloats(n, seed, lo, hi);
}

template <typename T> std::vector<T> toDevice(const std::vector<float> &v) {
  if constexpr (kIsBf16<T>)
    return toBf16(v);
  else
    return v;
}

template <typename T> std::vector<float> toHost(const std::vector<T> &v) {
  if constexpr (kIsBf16<T>)
    return fromBf16(v);
  else
    return v;
}

bp_status_t linearFwd(const bp_bf16_t *x, const bp_bf16_t *w,
                      const bp_bf16_t *b, bp_bf16_t *y, int64_t N, int64_t In,
                      int64_t Out, void *s) {
  return bp_cuda_linear_fwd(x, w, b, y, N, In, Out, s);
}
bp_status_t linearFwd(const float *x, const float *w, const float *b, float *y,
                      int64_t N, int64_t In, int64_t Out, void *s) {
  return bp_cuda_linear_fwd_f32(x, w, b, y, N, In, Out, s);
}
bp_status_t linearGeluFwd(const bp_bf16_t *x, const bp_bf16_t *w,
                          const bp_bf16_t *b, bp_bf16_t *y, bp_bf16_t *pre,
                          int64_t N, int64_t In, int64_t Out, void *s) {
  return bp_cuda_linear_gelu_fwd(x, w, b, y, pre, N, In, Out, s);
}
bp_status_t linearGeluFwd(const float *x, const float *w, const float *b,
                          float *y, float *pre, int64_t N, int64_t In,
                          int64_t Out, void *s) {
  return bp_cuda_linear_gelu_fwd_f32(x, w, b, y, pre, N, In, Out, s);
}
bp_status_t linearBwdInput(const bp_bf16_t *dy, const bp_bf16_t *w,
                           bp_bf16_t *dx, int64_t N, int64_t In, int64_t Out,
                           void *s) {
  return bp_cuda_linear_bwd_input(dy, w, dx, N, In, Out, s);
}
bp_status_t linearBwdInput(const float *dy, const float *w, float *dx,
                           int64_t N, int64_t In, int64_t Out, void *s) {
  return bp_cuda_linear_bwd_input_f32(dy, w, dx, N, In, Out, s);
}
bp_status_t linearBwdInputGelu(const bp_bf16_t *dy, const bp_bf16_t *w,
                               const bp_bf16_t *pre, bp_bf16_t *dx, int64_t N,
                               int64_t In, int64_t Out, void *s) {
  return bp_cuda_linear_bwd_input_gelu(dy, w, pre, dx, N, In, Out, s);
}
bp_status_t linearBwdInputGelu(const float *dy, const float *w,
                               const float *pre, float *dx, int64_t N,
                               int64_t In, int64_t Out, void *s) {
  return bp_cuda_linear_bwd_input_gelu_f32(dy, w, pre, dx, N, In, Out, s);
}
bp_status_t linearBwdWeight(const bp_bf16_t *dy, const bp_bf16_t *x, float *dw,
                            float *db, int64_t N, int64_t In, int64_t Out,
                            void *s) {
  return bp_cuda_linear_bwd_weight(dy, x, dw, db, N, In, Out, s);
}
bp_status_t linearBwdWeight(const float *dy, const float *x, float *dw,
                            float *db, int64_t N, int64_t In, int64_t Out,
                            void *s) {
  return bp_cuda_linear_bwd_weight_f32(dy, x, dw, db, N, In, Out, s);
}

//===----------------------------------------------------------------------===//
// References beyond Reference.h's forward, in double.
//===----------------------------------------------------------------------===//

/// dx [N, In] = dy [N, Out] W [Out, In].
std::vector<double> inputGradRef(const std::vector<double> &dy,
                                 const std::vector<double> &w, int64_t N,
                                 int64_t In, int64_t Out) {
  std::vector<double> dx(N * In, 0.0);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t o = 0; o < Out; ++o)
      for (int64_t k = 0; k < In; ++k)
        dx[i * In + k] += dy[i * Out + o] * w[o * In + k];
  return dx;
}

/// dw0 + dy^T x, [Out, In].
std::vector<double> weightGradRef(const std::vector<double> &dy,
                                  const std::vector<double> &x,
                                  const std::vector<float> &dw0, int64_t N,
                                  int64_t In, int64_t Out) {
  std::vector<double> dw(dw0.begin(), dw0.end());
  for (int64_t i = 0; i < N; ++i)
    for (int64_t o = 0; o < Out; ++o)
      for (int64_t k = 0; k < In; ++k)
        dw[o * In + k] += dy[i * Out + o] * x[i * In + k];
  return dw;
}

/// db0 + column sums of dy, [Out].
std::vector<double> biasGradRef(const std::vector<double> &dy,
                                const std::vector<float> &db0, int64_t N,
                                int64_t Out) {
  std::vector<double> db(db0.begin(), db0.end());
  for (int64_t i = 0; i < N; ++i)
    for (int64_t o = 0; o < Out; ++o)
      db[o] += dy[i * Out + o];
  return db;
}

//===----------------------------------------------------------------------===//
// Every function at every shape.
//===----------------------------------------------------------------------===//

struct LinearCase {
  int64_t N, In, Out;
  bool bf16;
  bool fused;
  bool bias;
};

void PrintTo(const LinearCase &c, std::ostream *os) {
  *os << "N=" << c.N << " In=" << c.In << " Out=" << c.Out
      << (c.bf16 ? " bf16" : " fp32") << (c.fused ? " fused" : " unfused")
      << (c.bias ? " bias" : " no-bias");
}

std::string linearCaseName(const ::testing::TestParamInfo<LinearCase> &info) {
  const LinearCase &c = info.param;
  return "N" + std::to_string(c.N) + "_In" + std::to_string(c.In) + "_Out" +
         std::to_string(c.Out) + (c.bf16 ? "_bf16" : "_fp32") +
         (c.fused ? "_fused" : "_unfused") + (c.bias ? "_bias" : "_nobias");
}

std::string shapeOf(const LinearCase &c) {
  return "N=" + std::to_string(c.N) + ",In=" + std::to_string(c.In) +
         ",Out=" + std::to_string(c.Out) + (c.fused ? ",fused" : ",unfused") +
         (c.bias ? ",bias" : "");
}

/// Restores the default (epilogues fused) whatever a test did.
class EpilogueFusionScope {
public:
  explicit EpilogueFusionScope(bool enabled) {
    linear::setEpilogueFusion(enabled);
  }
  ~EpilogueFusionScope() { linear::setEpilogueFusion(true); }
};

class CudaLinear : public CudaTest,
                   public ::testing::WithParamInterface<LinearCase> {
protected:
  template <typename T> void runAll();
};

template <typename T> void CudaLinear::runAll() {
  const LinearCase c = GetParam();
  const int64_t N = c.N, In = c.In, Out = c.Out;
  const std::string shape = shapeOf(c);
  const double rtol = outputRtol<T>();
  const char *suffix = kIsBf16<T> ? "" : "_f32";
  auto name = [&](const char *function) {
    return std::string(function) + suffix;
  };
  EpilogueFusionScope fusion(c.fused);
  const uint32_t seed = static_cast<uint32_t>(N * 7919 + In * 131 + Out);

  auto x = inputs<T>(N * In, seed);
  auto w = inputs<T>(Out * In, seed + 1);
  auto b = c.bias ? inputs<T>(Out, seed + 2) : std::vector<float>();
  auto dy = inputs<T>(N * Out, seed + 3);
  // GELU's interesting range: both tails and the curved middle.
  auto preIn = inputs<T>(N * In, seed + 4, -3.0f, 3.0f);
  auto dw0 = randomFloats(Out * In, seed + 5);
  auto db0 = randomFloats(Out, seed + 6);

  DeviceBuffer<T> dX(toDevice<T>(x)), dW(toDevice<T>(w)), dDy(toDevice<T>(dy)),
      dPreIn(toDevice<T>(preIn)), dY(N * Out), dYGelu(N * Out),
      dPreOut(N * Out), dDx(N * In), dDxGelu(N * In);
  DeviceBuffer<T> dB(c.bias ? toDevice<T>(b) : std::vector<T>(1));
  DeviceBuffer<float> dDw(dw0), dDb(db0);
  const T *bias = c.bias ? dB.get() : nullptr;
  float *dbOut = c.bias ? dDb.get() : nullptr;

  ASSERT_EQ(linearFwd(dX.get(), dW.get(), bias, dY.get(), N, In, Out, stream()),
            BP_OK);
  ASSERT_EQ(linearGeluFwd(dX.get(), dW.get(), bias, dYGelu.get(), dPreOut.get(),
                          N, In, Out, stream()),
            BP_OK);
  ASSERT_EQ(
      linearBwdInput(dDy.get(), dW.get(), dDx.get(), N, In, Out, stream()),
      BP_OK);
  ASSERT_EQ(linearBwdInputGelu(dDy.get(), dW.get(), dPreIn.get(), dDxGelu.get(),
                               N, In, Out, stream()),
            BP_OK);
  ASSERT_EQ(linearBwdWeight(dDy.get(), dX.get(), dDw.get(), dbOut, N, In, Out,
                            stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  const auto xD = toDouble(x), wD = toDouble(w), dyD = toDouble(dy);
  const auto pre = ref::linear(xD, wD, toDouble(b), N, In, Out);
  const auto dx = inputGradRef(dyD, wD, N, In, Out);
  EXPECT_TRUE(checkClose(name("bp_cuda_linear_fwd").c_str(), "y", shape,
                         toHost(dY.download()), pre, rtol));
  EXPECT_TRUE(checkClose(name("bp_cuda_linear_gelu_fwd").c_str(), "pre", shape,
                         toHost(dPreOut.download()), pre, rtol));
  EXPECT_TRUE(checkClose(name("bp_cuda_linear_gelu_fwd").c_str(), "y", shape,
                         toHost(dYGelu.download()), ref::gelu(pre), rtol));
  EXPECT_TRUE(checkClose(name("bp_cuda_linear_bwd_input").c_str(), "dx", shape,
                         toHost(dDx.download()), dx, rtol));
  EXPECT_TRUE(checkClose(name("bp_cuda_linear_bwd_input_gelu").c_str(), "dx",
                         shape, toHost(dDxGelu.download()),
                         ref::geluGrad(dx, toDouble(preIn)), rtol));
  EXPECT_TRUE(checkClose(
      name("bp_cuda_linear_bwd_weight").c_str(), "dw", shape, dDw.download(),
      weightGradRef(dyD, xD, dw0, N, In, Out), kProductRtol));
  if (c.bias) {
    std::vector<float> db = dDb.download();
    EXPECT_TRUE(checkClose(name("bp_cuda_linear_bwd_weight").c_str(), "db",
                           shape, db, biasGradRef(dyD, db0, N, Out),
                           kProductRtol));
    // Deterministic: the same sums again from the same start, to the bit.
    dDb.upload(db0);
    ASSERT_EQ(linearBwdWeight(dDy.get(), dX.get(), dDw.get(), dDb.get(), N, In,
                              Out, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
    std::vector<float> again = dDb.download();
    EXPECT_EQ(std::memcmp(db.data(), again.data(), db.size() * sizeof(float)),
              0)
        << "db differs between two identical runs";
  }
}

TEST_P(CudaLinear, EveryFunctionMatchesReference) {
  if (GetParam().bf16)
    runAll<bp_bf16_t>();
  else
    runAll<float>();
}

std::vector<LinearCase> linearCases() {
  struct Shape {
    int64_t N, In, Out;
  };
  const Shape shapes[] = {
      {37, 72, 100}, // Out not a multiple of 8: no GELU forward epilogue
      {37, 100, 72}, // In not a multiple of 8: no dGELU epilogue
      {1, 64, 48},   // a single row
      {5, 3, 7},     // rows at 6- and 14-byte offsets in bf16
      {64, 256, 1024},
      {8, 8192, 40},  // long reductions: the forward's K = In ...
      {8, 40, 8192},  // ... the input gradient's K = Out ...
      {4100, 24, 16}, // ... the weight gradient's K = N (and db's rows)
  };
  std::vector<LinearCase> cases;
  for (const Shape &s : shapes)
    for (bool bf16 : {true, false})
      for (bool fused : {true, false})
        for (bool bias : {true, false})
          cases.push_back({s.N, s.In, s.Out, bf16, fused, bias});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaLinear, ::testing::ValuesIn(linearCases()),
                         linearCaseName);

//===----------------------------------------------------------------------===//
// The bf16 GELU epilogues are the tanh form.
//===----------------------------------------------------------------------===//

/// allClose with no floor (every element relative to itself), plus its
/// BPCHECK line.
::testing::AssertionResult checkRelative(const char *kernel, const char *tensor,
                                         const std::vector<float> &actual,
                                         const std::vector<double> &expected,
                                         double rtol) {
  ::testing::AssertionResult ok = allClose(actual, expected, rtol, 0.0);
  std::printf("BPCHECK %s %s gelu-tail %.3e %.1e %s\n", kernel, tensor,
              maxNormalizedError(actual, expected, 0.0), rtol,
              ok ? "PASS" : "FAIL");
  std::fflush(stdout);
  return ok;
}

class CudaLinearGeluTail : public CudaTest,
                           public ::testing::WithParamInterface<bool> {};

/// With W the identity, pre = x exactly, so y = gelu(x) and, with dy = 1,
/// dx = gelu'(pre): the epilogue's GELU alone, where x in [-3.5, -2.9]
/// makes the erf form 5-30% (its derivative 3-16%) away from the tanh form,
/// and a hardware tanh approximation (2^-11) further still, since
/// 1 + tanh is ~1e-3 there. Held to 1e-2 of each element.
TEST_P(CudaLinearGeluTail, MatchesTanhForm) {
  const bool fused = GetParam();
  EpilogueFusionScope fusion(fused);
  const int64_t N = 16, H = 64;
  std::vector<float> identity(H * H, 0.0f);
  for (int64_t i = 0; i < H; ++i)
    identity[i * H + i] = 1.0f;
  auto x = randomBf16Values(N * H, 42, -3.5f, -2.9f);
  std::vector<float> zeros(H, 0.0f), ones(N * H, 1.0f);
  DeviceBuffer<bp_bf16_t> dX(toBf16(x)), dW(toBf16(identity)),
      dZero(toBf16(zeros)), dOnes(toBf16(ones)), dY(N * H), dPre(N * H),
      dDx(N * H);

  const auto before = linear::epilogueCounts();
  for (bool withBias : {false, true}) {
    ASSERT_EQ(bp_cuda_linear_gelu_fwd(dX.get(), dW.get(),
                                      withBias ? dZero.get() : nullptr,
                                      dY.get(), dPre.get(), N, H, H, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
    EXPECT_TRUE(checkRelative("bp_cuda_linear_gelu_fwd", "pre",
                              fromBf16(dPre.download()), toDouble(x), 1e-6));
    EXPECT_TRUE(checkRelative("bp_cuda_linear_gelu_fwd", "y",
                              fromBf16(dY.download()), ref::gelu(toDouble(x)),
                              kBf16Rtol))
        << (fused ? "cuBLASLt's GELU epilogue" : "the unfused GELU kernel")
        << (withBias ? " (with bias)" : "") << " is not the tanh form";
  }
  ASSERT_EQ(bp_cuda_linear_bwd_input_gelu(dOnes.get(), dW.get(), dX.get(),
                                          dDx.get(), N, H, H, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkRelative(
      "bp_cuda_linear_bwd_input_gelu", "dx", fromBf16(dDx.download()),
      ref::geluGrad(toDouble(ones), toDouble(x)), kBf16Rtol))
      << (fused ? "cuBLASLt's dGELU epilogue" : "the unfused dGELU kernel")
      << " is not the tanh form's derivative";
  const auto after = linear::epilogueCounts();
  // Three calls, each fused or each not, as asked: else this test checked
  // another path than it says.
  EXPECT_EQ(after.fused - before.fused, fused ? 3 : 0);
  EXPECT_EQ(after.unfused - before.unfused, fused ? 0 : 3);
}

INSTANTIATE_TEST_SUITE_P(Paths, CudaLinearGeluTail, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return std::string(info.param ? "Fused" : "Unfused");
                         });

//===----------------------------------------------------------------------===//
// Epilogues are fused where they are valid (the speed the benchmarks need).
//===----------------------------------------------------------------------===//

using CudaLinearFusion = CudaTest;

TEST_F(CudaLinearFusion, ValidShapesUseCublasLtEpilogues) {
  const int64_t N = 64, In = 128, Out = 256;
  DeviceBuffer<bp_bf16_t> x(toBf16(randomBf16Values(N * In, 1))),
      w(toBf16(randomBf16Values(Out * In, 2))),
      b(toBf16(randomBf16Values(Out, 3))),
      dy(toBf16(randomBf16Values(N * Out, 4))), y(N * Out), pre(N * Out),
      dx(N * In), preIn(toBf16(randomBf16Values(N * In, 5)));
  DeviceBuffer<float> xf(randomFloats(N * In, 6)),
      wf(randomFloats(Out * In, 7)), bf(randomFloats(Out, 8)), yf(N * Out);
  struct Step {
    const char *what;
    std::function<bp_status_t()> call;
  } steps[] = {
      {"bf16 forward, BIAS epilogue",
       [&] {
         return bp_cuda_linear_fwd(x.get(), w.get(), b.get(), y.get(), N, In,
                                   Out, stream());
       }},
      {"bf16 fused forward, GELU_AUX_BIAS epilogue",
       [&] {
         return bp_cuda_linear_gelu_fwd(x.get(), w.get(), b.get(), y.get(),
                                        pre.get(), N, In, Out, stream());
       }},
      {"bf16 input gradient through GELU, DGELU epilogue",
       [&] {
         return bp_cuda_linear_bwd_input_gelu(dy.get(), w.get(), preIn.get(),
                                              dx.get(), N, In, Out, stream());
       }},
      {"fp32 forward, BIAS epilogue",
       [&] {
         return bp_cuda_linear_fwd_f32(xf.get(), wf.get(), bf.get(), yf.get(),
                                       N, In, Out, stream());
       }},
  };
  for (const Step &step : steps) {
    const auto before = linear::epilogueCounts();
    ASSERT_EQ(step.call(), BP_OK) << step.what;
    const auto after = linear::epilogueCounts();
    EXPECT_EQ(after.fused - before.fused, 1)
        << step.what << ": cuBLASLt declined the epilogue at N=" << N
        << " In=" << In << " Out=" << Out << ", so the unfused path ran";
  }
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
}

//===----------------------------------------------------------------------===//
// runtime.h's bp_linear_* and bp_linear_*_bf16 on the context's stream.
//===----------------------------------------------------------------------===//

/// Restores the context the other tests expect (the default stream).
class StreamScope {
public:
  explicit StreamScope(void *stream) { bp_cuda_set_stream(stream); }
  ~StreamScope() { bp_cuda_set_stream(nullptr); }
};

/// runtime.h's linear kernels of the precision whose element type is T.
template <typename T> struct AbiLinear;
template <> struct AbiLinear<float> {
  static constexpr auto fwd = bp_linear_fwd;
  static constexpr auto geluFwd = bp_linear_gelu_fwd;
  static constexpr auto bwdInput = bp_linear_bwd_input;
  static constexpr auto bwdInputGelu = bp_linear_bwd_input_gelu;
  static constexpr auto bwdWeight = bp_linear_bwd_weight;
};
template <> struct AbiLinear<bp_bf16_t> {
  static constexpr auto fwd = bp_linear_fwd_bf16;
  static constexpr auto geluFwd = bp_linear_gelu_fwd_bf16;
  static constexpr auto bwdInput = bp_linear_bwd_input_bf16;
  static constexpr auto bwdInputGelu = bp_linear_bwd_input_gelu_bf16;
  static constexpr auto bwdWeight = bp_linear_bwd_weight_bf16;
};

class CudaLinearAbi : public CudaTest,
                      public ::testing::WithParamInterface<bool> {
protected:
  /// Runs runtime.h's five functions through the context and cuda.h's
  /// directly, on the same inputs; the same algorithms give the same bits.
  template <typename T> void compareWithDirect();
};

template <typename T> void CudaLinearAbi::compareWithDirect() {
  const int64_t N = 24, In = 40, Out = 56;
  StreamScope context(stream());
  using Abi = AbiLinear<T>;
  DeviceBuffer<T> x(toDevice<T>(inputs<T>(N * In, 11))),
      w(toDevice<T>(inputs<T>(Out * In, 12))),
      b(toDevice<T>(inputs<T>(Out, 13))),
      dy(toDevice<T>(inputs<T>(N * Out, 14))),
      preIn(toDevice<T>(inputs<T>(N * In, 15, -3.0f, 3.0f)));
  // [0]: through runtime.h; [1]: through cuda.h.
  DeviceBuffer<T> y0(N * Out), y1(N * Out), g0(N * Out), g1(N * Out),
      p0(N * Out), p1(N * Out), dx0(N * In), dx1(N * In), dxg0(N * In),
      dxg1(N * In);
  const auto dw0 = randomFloats(Out * In, 16), db0 = randomFloats(Out, 17);
  DeviceBuffer<float> dwA(dw0), dwB(dw0), dbA(db0), dbB(db0);

  ASSERT_EQ(Abi::fwd(x.get(), w.get(), b.get(), y0.get(), N, In, Out), BP_OK);
  ASSERT_EQ(
      linearFwd(x.get(), w.get(), b.get(), y1.get(), N, In, Out, stream()),
      BP_OK);
  ASSERT_EQ(
      Abi::geluFwd(x.get(), w.get(), b.get(), g0.get(), p0.get(), N, In, Out),
      BP_OK);
  ASSERT_EQ(linearGeluFwd(x.get(), w.get(), b.get(), g1.get(), p1.get(), N, In,
                          Out, stream()),
            BP_OK);
  ASSERT_EQ(Abi::bwdInput(dy.get(), w.get(), dx0.get(), N, In, Out), BP_OK);
  ASSERT_EQ(linearBwdInput(dy.get(), w.get(), dx1.get(), N, In, Out, stream()),
            BP_OK);
  ASSERT_EQ(
      Abi::bwdInputGelu(dy.get(), w.get(), preIn.get(), dxg0.get(), N, In, Out),
      BP_OK);
  ASSERT_EQ(linearBwdInputGelu(dy.get(), w.get(), preIn.get(), dxg1.get(), N,
                               In, Out, stream()),
            BP_OK);
  ASSERT_EQ(Abi::bwdWeight(dy.get(), x.get(), dwA.get(), dbA.get(), N, In, Out),
            BP_OK);
  ASSERT_EQ(linearBwdWeight(dy.get(), x.get(), dwB.get(), dbB.get(), N, In, Out,
                            stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  auto same = [](const auto &a, const auto &b, const char *what) {
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])), 0)
        << what << " differs between runtime.h and cuda.h";
  };
  same(y0.download(), y1.download(), "bp_linear_fwd y");
  same(g0.download(), g1.download(), "bp_linear_gelu_fwd y");
  same(p0.download(), p1.download(), "bp_linear_gelu_fwd pre");
  same(dx0.download(), dx1.download(), "bp_linear_bwd_input dx");
  same(dxg0.download(), dxg1.download(), "bp_linear_bwd_input_gelu dx");
  same(dwA.download(), dwB.download(), "bp_linear_bwd_weight dw");
  same(dbA.download(), dbB.download(), "bp_linear_bwd_weight db");
}

TEST_P(CudaLinearAbi, RuntimeAbiRunsOnTheContextsStream) {
  if (GetParam())
    compareWithDirect<bp_bf16_t>();
  else
    compareWithDirect<float>();
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaLinearAbi, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return std::string(info.param ? "Bf16" : "Fp32");
                         });

//===----------------------------------------------------------------------===//
// Argument checks: on the host, before anything is enqueued, so they run
// without a device too (the pointers are never dereferenced).
//===----------------------------------------------------------------------===//

TEST(CudaLinearArgs, RejectsNullSizeAndAliasingErrors) {
  bp_bf16_t h[4] = {};
  float f[4] = {};
  bp_bf16_t *p = h;
  float *q = f;
  // Null required pointers.
  EXPECT_EQ(bp_cuda_linear_fwd(nullptr, p, p, p, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_fwd_f32(q, q, q, nullptr, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_gelu_fwd(p, p, p, p, nullptr, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_gelu_fwd_f32(q, nullptr, q, q, q, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input(p, nullptr, p, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input_f32(nullptr, q, q, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input_gelu(p, p, nullptr, p, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      bp_cuda_linear_bwd_input_gelu_f32(q, q, q, nullptr, 1, 1, 1, nullptr),
      BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_weight(p, p, nullptr, q, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_weight_f32(q, nullptr, q, q, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // Non-positive sizes, each position once.
  EXPECT_EQ(bp_cuda_linear_fwd(p, p, nullptr, p, 0, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      bp_cuda_linear_gelu_fwd_f32(q, q, nullptr, q, f + 1, 1, -1, 1, nullptr),
      BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input(p, p, p, 1, 1, 0, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input_gelu_f32(q, q, q, q, -3, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_weight(p, p, q, nullptr, 1, 0, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // Outputs that are one of the inputs (or each other).
  EXPECT_EQ(bp_cuda_linear_fwd(p, p + 1, nullptr, p, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      bp_cuda_linear_gelu_fwd(p, p, nullptr, p + 1, p + 1, 1, 1, 1, nullptr),
      BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input(p, p + 1, p + 1, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_linear_bwd_input_gelu_f32(q, q + 1, q + 2, q + 2, 1, 1, 1,
                                              nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      bp_cuda_linear_bwd_weight_f32(q, q + 1, q + 2, q + 2, 1, 1, 1, nullptr),
      BP_ERR_INVALID_ARGUMENT);
}

} // namespace
