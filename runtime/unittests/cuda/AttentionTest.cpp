//===- AttentionTest.cpp - CUDA attention against a float64 reference -----===//
//
// bp_cuda_attention_{fwd,bwd}{,_f32} and runtime.h's bp_attention_* on the
// CUDA target, against the float64 reference on the host (Reference.h's
// forward; the backward below), at shapes that exercise every path and
// edge of the kernels (runtime/lib/cuda/attention/):
//  - T = 1, 17, 100, 129, 200, 256, 300: a partial tile only, several key
//    blocks (the double-buffered loads), tails of 1 row, and tails that are
//    not a multiple of any of the tensor-core kernels' tiles (128 query
//    rows; 64 keys; 32 keys in dQ; 32 or 64 queries in dK and dV), so that
//    whole warps of a block have rows or keys past T;
//  - d = 64 and 128 (the tensor-core kernels' two widths), 40, 72 and 96
//    (multiples of 8 padded to 64 or 128: the dK and dV kernel's second
//    half of the head columns partly or wholly past d), 20 and 160 (the
//    CUDA-core fallback for bf16);
//  - causal and bidirectional; B and nh > 1 (the qkv and lse strides).
// The backward is fed the reference's out (rounded as the kernel would
// store it) and lse, so it is checked on its own.
//
// bp_cuda_attention_dropout_* at the same shapes (so both kernel families
// in bf16, the CUDA-core ones in fp32) against DropoutReference.h's float64
// attention with the mask drawn from its definition, the reference the CPU
// kernel is held to (../cpu/KernelsTest.cpp, ../cpu/GradCheckTest.cpp; the
// CPU library cannot be linked here, its runtime.h functions being this
// library's).
// The tolerances are attention's: the kernels round the same quantities
// (P, or P' = P / (1 - p) where kept, and dS to bf16 before the products),
// and a float64 emulation of that rounding saw dqkv's error grow by a fifth
// from p = 0 to p = 0.5 on these shapes, out's by a tenth.
//
// Tolerances, element-wise as allClose: |err| <= rtol (|expected| + 0.1
// max|expected|). The reference sees exactly the bf16 inputs (and, in the
// backward, the rounded out) that the kernel sees, so what is left is the
// kernel's own rounding:
//  - bf16 out: the output's rounding (2^-9 relative) plus, in the
//    tensor-core kernel, P rounded to bf16 before P V (2^-9 per term of a
//    convex combination): 2e-2, about 4 x 2^-9 of the row's scale.
//  - bf16 dqkv: the tensor-core backward also rounds P and dS to bf16
//    before P^T dO, dS K and dS^T Q (as FlashAttention does). A gradient
//    element is a sum of such terms that can be several times larger than
//    the element itself (dS changes sign along a row), so its error is
//    2^-9 of the terms, several 2^-9 of its own scale: 5e-2. (A host
//    emulation of these kernels, fragment layouts from the PTX ISA, saw at
//    most 2.5e-2 on these shapes; the CUDA-core bf16 path, which rounds
//    only its outputs, 3.3e-3.)
//  - lse (fp32 from fp32 sums of bf16 products): kFp32Rtol.
//  - fp32 kernels: fp32 sums over d and T (~1e-6 relative): 1e-4.
//
// Every test but the argument checks skips itself without a device.
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "DropoutReference.h"
#include "Reference.h"
#include "bitpipe/program.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

constexpr double kAttentionOutBf16Rtol = 2e-2;
constexpr double kAttentionGradBf16Rtol = 5e-2;
constexpr double kAttentionFp32Rtol = 1e-4;

struct AttentionCase {
  int64_t B, T, nh, d;
  bool causal;
};

void PrintTo(const AttentionCase &c, std::ostream *os) {
  *os << "B=" << c.B << " T=" << c.T << " nh=" << c.nh << " d=" << c.d
      << (c.causal ? " causal" : " bidirectional");
}

std::string shapeOf(const AttentionCase &c) {
  return "B=" + std::to_string(c.B) + ",T=" + std::to_string(c.T) +
         ",nh=" + std::to_string(c.nh) + ",d=" + std::to_string(c.d) +
         (c.causal ? ",causal" : ",bidir");
}

std::string caseName(const ::testing::TestParamInfo<AttentionCase> &info) {
  const AttentionCase &c = info.param;
  return "B" + std::to_string(c.B) + "_T" + std::to_string(c.T) + "_nh" +
         std::to_string(c.nh) + "_d" + std::to_string(c.d) +
         (c.causal ? "_causal" : "_bidir");
}

/// The inputs and the float64 results of one case.
struct Expected {
  std::vector<float> qkv, dout, outRounded;
  std::vector<double> out, lse, dqkv;
};

/// q and k in [-2, 2], so that scores spread over a few units and the
/// online softmax's running max changes between key blocks; \p round makes
/// the inputs (and the out fed to the backward) bf16 values. With \p drop,
/// the results of attention with that dropout.
Expected expectedFor(const AttentionCase &c, bool round,
                     const ref::DropoutSpec *drop = nullptr) {
  const int64_t H = c.nh * c.d;
  const uint32_t seed =
      static_cast<uint32_t>(c.B * 7919 + c.T * 131 + c.nh * 17 + c.d);
  Expected e;
  e.qkv = round ? randomBf16Values(c.B * c.T * 3 * H, seed, -2.0f, 2.0f)
                : randomFloats(c.B * c.T * 3 * H, seed, -2.0f, 2.0f);
  e.dout = round ? randomBf16Values(c.B * c.T * H, seed + 1)
                 : randomFloats(c.B * c.T * H, seed + 1);
  auto qkvD = toDouble(e.qkv);
  e.out = drop ? ref::attentionDropout(qkvD, c.B, c.T, H, c.nh, c.causal, *drop,
                                       &e.lse)
               : ref::attention(qkvD, c.B, c.T, H, c.nh, c.causal, &e.lse);
  e.outRounded.assign(e.out.begin(), e.out.end());
  if (round)
    e.outRounded = fromBf16(toBf16(e.outRounded));
  e.dqkv =
      drop ? ref::attentionDropoutGrad(qkvD, toDouble(e.outRounded),
                                       toDouble(e.dout), c.B, c.T, H, c.nh,
                                       c.causal, *drop)
           : ref::attentionGrad(qkvD, toDouble(e.outRounded), toDouble(e.dout),
                                c.B, c.T, H, c.nh, c.causal);
  return e;
}

std::vector<float> toFloat(const std::vector<double> &v) {
  return std::vector<float>(v.begin(), v.end());
}

class CudaAttention : public CudaTest,
                      public ::testing::WithParamInterface<AttentionCase> {};

TEST_P(CudaAttention, Bf16MatchesReference) {
  const AttentionCase c = GetParam();
  const int64_t H = c.nh * c.d;
  const std::string shape = shapeOf(c);
  Expected e = expectedFor(c, /*round=*/true);

  DeviceBuffer<bp_bf16_t> dQkv(toBf16(e.qkv)), dOut(c.B * c.T * H),
      dDout(toBf16(e.dout)), dOutRef(toBf16(e.outRounded)),
      dDqkv(c.B * c.T * 3 * H);
  DeviceBuffer<float> dLse(c.B * c.nh * c.T), dLseRef(toFloat(e.lse));
  ASSERT_EQ(bp_cuda_attention_fwd(dQkv.get(), dOut.get(), dLse.get(), c.B,
                                  c.T, H, c.nh, c.causal, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_attention_bwd(dQkv.get(), dOutRef.get(), dDout.get(),
                                  dLseRef.get(), dDqkv.get(), c.B, c.T, H,
                                  c.nh, c.causal, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("attention_fwd", "out", shape,
                         fromBf16(dOut.download()), e.out,
                         kAttentionOutBf16Rtol));
  EXPECT_TRUE(checkClose("attention_fwd", "lse", shape, dLse.download(), e.lse,
                         kFp32Rtol));
  EXPECT_TRUE(checkClose("attention_bwd", "dqkv", shape,
                         fromBf16(dDqkv.download()), e.dqkv,
                         kAttentionGradBf16Rtol));
}

TEST_P(CudaAttention, Fp32MatchesReference) {
  const AttentionCase c = GetParam();
  const int64_t H = c.nh * c.d;
  const std::string shape = shapeOf(c);
  Expected e = expectedFor(c, /*round=*/false);

  DeviceBuffer<float> dQkv(e.qkv), dOut(c.B * c.T * H), dDout(e.dout),
      dOutRef(e.outRounded), dDqkv(c.B * c.T * 3 * H),
      dLse(c.B * c.nh * c.T), dLseRef(toFloat(e.lse));
  ASSERT_EQ(bp_cuda_attention_fwd_f32(dQkv.get(), dOut.get(), dLse.get(), c.B,
                                      c.T, H, c.nh, c.causal, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_attention_bwd_f32(dQkv.get(), dOutRef.get(), dDout.get(),
                                      dLseRef.get(), dDqkv.get(), c.B, c.T, H,
                                      c.nh, c.causal, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("attention_fwd_f32", "out", shape, dOut.download(),
                         e.out, kAttentionFp32Rtol));
  EXPECT_TRUE(checkClose("attention_fwd_f32", "lse", shape, dLse.download(),
                         e.lse, kAttentionFp32Rtol));
  EXPECT_TRUE(checkClose("attention_bwd_f32", "dqkv", shape,
                         dDqkv.download(), e.dqkv, kAttentionFp32Rtol));
}

std::vector<AttentionCase> attentionCases() {
  const AttentionCase shapes[] = {
      {1, 1, 1, 64, false},  // one row: a tile that is almost all tail
      {2, 17, 3, 64, false}, // B, nh > 1; T below one tile
      {1, 100, 2, 128, false},
      {2, 129, 2, 40, false},  // d padded to 64; T = 2 tiles + 1 row
      {1, 256, 4, 128, false}, // four key blocks: the double buffers cycle
      {1, 200, 2, 96, false},  // d padded to 128; T past the last full tile
      {2, 300, 2, 72, false},  // d padded to 128; three query blocks
      {1, 70, 3, 24, false},   // d padded to 64: the second column half past d
      {2, 70, 2, 20, false},   // d not a multiple of 8: CUDA-core bf16
      {1, 50, 1, 160, false},  // d above 128: CUDA-core bf16
  };
  std::vector<AttentionCase> cases;
  for (AttentionCase c : shapes)
    for (bool causal : {true, false}) {
      c.causal = causal;
      cases.push_back(c);
    }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention,
                         ::testing::ValuesIn(attentionCases()), caseName);

//===----------------------------------------------------------------------===//
// Attention with dropout on the probabilities.
//===----------------------------------------------------------------------===//

/// Two masks: p = 0.1 and 0.5, keys with words negative as int32.
const ref::DropoutSpec kDropoutSpecs[] = {
    {0x0123456789abcdefULL, 0xfedcba9876543210ULL, 4, 0.1f},
    {42, 0x100000000ULL, 7, 0.5f}};

/// The key of \p spec in device memory, as the kernels read it.
std::vector<int32_t> keyOf(const ref::DropoutSpec &spec) {
  const auto key = spec.key();
  return std::vector<int32_t>(key.begin(), key.end());
}

std::string withDropout(const AttentionCase &c, const ref::DropoutSpec &spec) {
  return shapeOf(c) + ",p=" + std::to_string(spec.p);
}

class CudaAttentionDropout
    : public CudaTest,
      public ::testing::WithParamInterface<AttentionCase> {};

TEST_P(CudaAttentionDropout, Bf16MatchesTheDefinition) {
  // d = 64, 128, 40: the tensor-core kernels; 20, 160: the CUDA-core ones.
  const AttentionCase c = GetParam();
  const int64_t H = c.nh * c.d;
  for (const ref::DropoutSpec &spec : kDropoutSpecs) {
    const std::string shape = withDropout(c, spec);
    Expected e = expectedFor(c, /*round=*/true, &spec);
    DeviceBuffer<bp_bf16_t> dQkv(toBf16(e.qkv)), dOut(c.B * c.T * H),
        dDout(toBf16(e.dout)), dOutRef(toBf16(e.outRounded)),
        dDqkv(c.B * c.T * 3 * H);
    DeviceBuffer<float> dLse(c.B * c.nh * c.T), dLseRef(toFloat(e.lse));
    DeviceBuffer<int32_t> dKey(keyOf(spec));
    ASSERT_EQ(bp_cuda_attention_dropout_fwd(
                  dQkv.get(), dOut.get(), dLse.get(), c.B, c.T, H, c.nh,
                  c.causal, dKey.get(), spec.site, spec.p, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_dropout_bwd(
                  dQkv.get(), dOutRef.get(), dDout.get(), dLseRef.get(),
                  dDqkv.get(), c.B, c.T, H, c.nh, c.causal, dKey.get(),
                  spec.site, spec.p, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
    EXPECT_TRUE(checkClose("attention_dropout_fwd", "out", shape,
                           fromBf16(dOut.download()), e.out,
                           kAttentionOutBf16Rtol));
    EXPECT_TRUE(checkClose("attention_dropout_fwd", "lse", shape,
                           dLse.download(), e.lse, kFp32Rtol));
    EXPECT_TRUE(checkClose("attention_dropout_bwd", "dqkv", shape,
                           fromBf16(dDqkv.download()), e.dqkv,
                           kAttentionGradBf16Rtol));
  }
}

TEST_P(CudaAttentionDropout, Fp32MatchesTheDefinition) {
  const AttentionCase c = GetParam();
  const int64_t H = c.nh * c.d;
  for (const ref::DropoutSpec &spec : kDropoutSpecs) {
    const std::string shape = withDropout(c, spec);
    Expected e = expectedFor(c, /*round=*/false, &spec);
    DeviceBuffer<float> dQkv(e.qkv), dOut(c.B * c.T * H), dDout(e.dout),
        dOutRef(e.outRounded), dDqkv(c.B * c.T * 3 * H), dLse(c.B * c.nh * c.T),
        dLseRef(toFloat(e.lse));
    DeviceBuffer<int32_t> dKey(keyOf(spec));
    ASSERT_EQ(bp_cuda_attention_dropout_fwd_f32(
                  dQkv.get(), dOut.get(), dLse.get(), c.B, c.T, H, c.nh,
                  c.causal, dKey.get(), spec.site, spec.p, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_dropout_bwd_f32(
                  dQkv.get(), dOutRef.get(), dDout.get(), dLseRef.get(),
                  dDqkv.get(), c.B, c.T, H, c.nh, c.causal, dKey.get(),
                  spec.site, spec.p, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
    EXPECT_TRUE(checkClose("attention_dropout_fwd_f32", "out", shape,
                           dOut.download(), e.out, kAttentionFp32Rtol));
    EXPECT_TRUE(checkClose("attention_dropout_fwd_f32", "lse", shape,
                           dLse.download(), e.lse, kAttentionFp32Rtol));
    EXPECT_TRUE(checkClose("attention_dropout_bwd_f32", "dqkv", shape,
                           dDqkv.download(), e.dqkv, kAttentionFp32Rtol));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionDropout,
                         ::testing::ValuesIn(attentionCases()), caseName);

using CudaAttentionRuns = CudaTest;

TEST_F(CudaAttentionRuns, BackwardIsDeterministic) {
  // No atomics: dQ and dK/dV are separate passes, and each element of dK
  // and dV has one owning warp, so two runs give the same bits (at both
  // widths of the tensor-core kernels).
  for (const AttentionCase c : {AttentionCase{2, 200, 2, 64, true},
                                AttentionCase{1, 300, 2, 128, false}}) {
    const int64_t H = c.nh * c.d;
    Expected e = expectedFor(c, /*round=*/true);
    DeviceBuffer<bp_bf16_t> dQkv(toBf16(e.qkv)), dDout(toBf16(e.dout)),
        dOut(toBf16(e.outRounded));
    DeviceBuffer<float> dLse(toFloat(e.lse));
    std::vector<std::vector<bp_bf16_t>> runs;
    for (int run = 0; run < 2; ++run) {
      DeviceBuffer<bp_bf16_t> dDqkv(c.B * c.T * 3 * H);
      ASSERT_EQ(bp_cuda_attention_bwd(dQkv.get(), dOut.get(), dDout.get(),
                                      dLse.get(), dDqkv.get(), c.B, c.T, H,
                                      c.nh, c.causal, stream()),
                BP_OK);
      runs.push_back(dDqkv.download());
    }
    EXPECT_EQ(runs[0], runs[1]) << shapeOf(c);
  }
}

TEST_F(CudaAttentionRuns, RuntimeAbiRunsOnTheContextsStream) {
  // runtime.h's bp_attention_fwd and _bf16 on the CUDA target: the call's
  // precision picks the kernels, the context's stream orders them; the same
  // bits as the direct call of the implementation it picks.
  const AttentionCase c{1, 33, 2, 64, true};
  const int64_t H = c.nh * c.d, nOut = c.B * c.T * H;
  Expected e = expectedFor(c, /*round=*/true);
  void *savedStream = bp_cuda_stream();
  bp_cuda_set_stream(stream());

  DeviceBuffer<bp_bf16_t> bQkv(toBf16(e.qkv)), bOut(nOut), bOutDirect(nOut);
  DeviceBuffer<float> bLse(c.B * c.nh * c.T), bLseDirect(c.B * c.nh * c.T);
  EXPECT_EQ(bp_attention_fwd_bf16(bQkv.get(), bOut.get(), bLse.get(), c.B, c.T,
                                  H, c.nh, c.causal),
            BP_OK);
  // Under bf16 the shim prefers cuDNN's fused attention where it supports
  // the shape, unless BITPIPE_CUDA_ATTENTION=own (abi/Attention.cpp).
  const char *choice = std::getenv("BITPIPE_CUDA_ATTENTION");
  const bool viaCudnn =
      !(choice && std::string(choice) == "own") &&
      bp_cudnn_attention_supported(c.B, c.T, H, c.nh, c.causal) != 0;
  EXPECT_EQ(viaCudnn
                ? bp_cudnn_attention_fwd(bQkv.get(), bOutDirect.get(),
                                         bLseDirect.get(), c.B, c.T, H, c.nh,
                                         c.causal, stream())
                : bp_cuda_attention_fwd(bQkv.get(), bOutDirect.get(),
                                        bLseDirect.get(), c.B, c.T, H, c.nh,
                                        c.causal, stream()),
            BP_OK);

  // fp32.
  DeviceBuffer<float> fQkv(e.qkv), fOut(nOut), fOutDirect(nOut),
      fLse(c.B * c.nh * c.T), fLseDirect(c.B * c.nh * c.T);
  EXPECT_EQ(bp_attention_fwd(fQkv.get(), fOut.get(), fLse.get(), c.B, c.T, H,
                             c.nh, c.causal),
            BP_OK);
  EXPECT_EQ(bp_cuda_attention_fwd_f32(fQkv.get(), fOutDirect.get(),
                                      fLseDirect.get(), c.B, c.T, H, c.nh,
                                      c.causal, stream()),
            BP_OK);

  bp_cuda_set_stream(savedStream);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_EQ(bOut.download(), bOutDirect.download());
  EXPECT_EQ(bLse.download(), bLseDirect.download());
  EXPECT_EQ(fOut.download(), fOutDirect.download());
  EXPECT_EQ(fLse.download(), fLseDirect.download());
  EXPECT_TRUE(checkClose("attention_abi", "out", shapeOf(c),
                         fromBf16(bOut.download()), e.out,
                         kAttentionOutBf16Rtol));
}

TEST_F(CudaAttentionRuns, DropoutAtZeroIsAttention) {
  // p = 0: the bits of bp_cuda_attention_*, on both kernel families (d = 64
  // tensor cores, d = 20 CUDA cores) and in fp32.
  const int32_t key[4] = {1, 2, 3, 4};
  DeviceBuffer<int32_t> dKey(std::vector<int32_t>(key, key + 4));
  for (const AttentionCase c : {AttentionCase{2, 70, 2, 64, true},
                                AttentionCase{1, 45, 2, 20, false}}) {
    const int64_t H = c.nh * c.d, nOut = c.B * c.T * H, nLse = c.B * c.nh * c.T;
    Expected e = expectedFor(c, /*round=*/true);
    DeviceBuffer<bp_bf16_t> qkv(toBf16(e.qkv)), dout(toBf16(e.dout)),
        outA(nOut), outB(nOut), dqkvA(qkv.size()), dqkvB(qkv.size());
    DeviceBuffer<float> lseA(nLse), lseB(nLse);
    ASSERT_EQ(bp_cuda_attention_fwd(qkv.get(), outA.get(), lseA.get(), c.B, c.T,
                                    H, c.nh, c.causal, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_dropout_fwd(qkv.get(), outB.get(), lseB.get(),
                                            c.B, c.T, H, c.nh, c.causal,
                                            dKey.get(), 5, 0.0f, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_bwd(qkv.get(), outA.get(), dout.get(),
                                    lseA.get(), dqkvA.get(), c.B, c.T, H, c.nh,
                                    c.causal, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_dropout_bwd(
                  qkv.get(), outA.get(), dout.get(), lseA.get(), dqkvB.get(),
                  c.B, c.T, H, c.nh, c.causal, dKey.get(), 5, 0.0f, stream()),
              BP_OK);
    EXPECT_EQ(outA.download(), outB.download()) << shapeOf(c);
    EXPECT_EQ(lseA.download(), lseB.download()) << shapeOf(c);
    EXPECT_EQ(dqkvA.download(), dqkvB.download()) << shapeOf(c);

    DeviceBuffer<float> fQkv(e.qkv), fDout(e.dout), fOutA(nOut), fOutB(nOut),
        fLseA(nLse), fLseB(nLse), fDqkvA(fQkv.size()), fDqkvB(fQkv.size());
    ASSERT_EQ(bp_cuda_attention_fwd_f32(fQkv.get(), fOutA.get(), fLseA.get(),
                                        c.B, c.T, H, c.nh, c.causal, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_dropout_fwd_f32(
                  fQkv.get(), fOutB.get(), fLseB.get(), c.B, c.T, H, c.nh,
                  c.causal, dKey.get(), 5, 0.0f, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_bwd_f32(fQkv.get(), fOutA.get(), fDout.get(),
                                        fLseA.get(), fDqkvA.get(), c.B, c.T, H,
                                        c.nh, c.causal, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_attention_dropout_bwd_f32(
                  fQkv.get(), fOutA.get(), fDout.get(), fLseA.get(),
                  fDqkvB.get(), c.B, c.T, H, c.nh, c.causal, dKey.get(), 5,
                  0.0f, stream()),
              BP_OK);
    EXPECT_EQ(fOutA.download(), fOutB.download()) << shapeOf(c);
    EXPECT_EQ(fLseA.download(), fLseB.download()) << shapeOf(c);
    EXPECT_EQ(fDqkvA.download(), fDqkvB.download()) << shapeOf(c);
  }
}

TEST_F(CudaAttentionRuns, RuntimeAbiDropoutRunsTheProjectsKernels) {
  // runtime.h's bp_attention_dropout_*_bf16: at p > 0 the project's kernels
  // (the bits of bp_cuda_attention_dropout_*) whatever cuDNN supports; at
  // p = 0 the bits of bp_attention_*_bf16, cuDNN's where it is chosen.
  const AttentionCase c{1, 33, 2, 64, true};
  const int64_t H = c.nh * c.d, nOut = c.B * c.T * H, nLse = c.B * c.nh * c.T;
  const ref::DropoutSpec &spec = kDropoutSpecs[1];
  Expected e = expectedFor(c, /*round=*/true, &spec);
  void *savedStream = bp_cuda_stream();
  bp_cuda_set_stream(stream());

  DeviceBuffer<int32_t> dKey(keyOf(spec));
  DeviceBuffer<bp_bf16_t> qkv(toBf16(e.qkv)), dout(toBf16(e.dout)),
      outAbi(nOut), outDirect(nOut), dqkvAbi(qkv.size()),
      dqkvDirect(qkv.size()), outZero(nOut), outPlain(nOut);
  DeviceBuffer<float> lseAbi(nLse), lseDirect(nLse), lseZero(nLse),
      lsePlain(nLse);
  EXPECT_EQ(bp_attention_dropout_fwd_bf16(qkv.get(), outAbi.get(), lseAbi.get(),
                                          c.B, c.T, H, c.nh, c.causal,
                                          dKey.get(), spec.site, spec.p),
            BP_OK);
  EXPECT_EQ(bp_attention_dropout_bwd_bf16(qkv.get(), outAbi.get(), dout.get(),
                                          lseAbi.get(), dqkvAbi.get(), c.B, c.T,
                                          H, c.nh, c.causal, dKey.get(),
                                          spec.site, spec.p),
            BP_OK);
  EXPECT_EQ(bp_cuda_attention_dropout_fwd(
                qkv.get(), outDirect.get(), lseDirect.get(), c.B, c.T, H, c.nh,
                c.causal, dKey.get(), spec.site, spec.p, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_attention_dropout_bwd(
                qkv.get(), outDirect.get(), dout.get(), lseDirect.get(),
                dqkvDirect.get(), c.B, c.T, H, c.nh, c.causal, dKey.get(),
                spec.site, spec.p, stream()),
            BP_OK);
  EXPECT_EQ(bp_attention_dropout_fwd_bf16(
                qkv.get(), outZero.get(), lseZero.get(), c.B, c.T, H, c.nh,
                c.causal, dKey.get(), spec.site, 0.0f),
            BP_OK);
  EXPECT_EQ(bp_attention_fwd_bf16(qkv.get(), outPlain.get(), lsePlain.get(),
                                  c.B, c.T, H, c.nh, c.causal),
            BP_OK);

  bp_cuda_set_stream(savedStream);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_EQ(outAbi.download(), outDirect.download());
  EXPECT_EQ(lseAbi.download(), lseDirect.download());
  EXPECT_EQ(dqkvAbi.download(), dqkvDirect.download());
  EXPECT_EQ(outZero.download(), outPlain.download());
  EXPECT_EQ(lseZero.download(), lsePlain.download());
  EXPECT_TRUE(checkClose("attention_dropout_abi", "out", withDropout(c, spec),
                         fromBf16(outAbi.download()), e.out,
                         kAttentionOutBf16Rtol));
}

//===----------------------------------------------------------------------===//
// Argument checks: on the host, before anything is enqueued, so they run
// without a device too. The pointers are never dereferenced.
//===----------------------------------------------------------------------===//

TEST(CudaAttentionArguments, BadArgumentsAreRejectedOnTheHost) {
  alignas(16) static bp_bf16_t bits[8];
  alignas(16) static float floats[8];
  bp_bf16_t *b = bits;
  float *f = floats;
  // Null pointers.
  EXPECT_EQ(bp_cuda_attention_fwd(nullptr, b, f, 1, 4, 64, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_attention_bwd(b, b, b, f, nullptr, 1, 4, 64, 1, 1,
                                  nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_attention_fwd_f32(f, nullptr, f, 1, 4, 64, 1, 0, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_attention_bwd_f32(f, f, f, nullptr, f, 1, 4, 64, 1, 0,
                                      nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // Non-positive sizes.
  EXPECT_EQ(bp_cuda_attention_fwd(b, b, f, 0, 4, 64, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_attention_fwd_f32(f, f, f, 1, -1, 64, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // H not divisible by nh.
  EXPECT_EQ(bp_cuda_attention_fwd(b, b, f, 1, 4, 100, 3, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_attention_bwd_f32(f, f, f, f, f, 1, 4, 100, 3, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // A head dimension above what any kernel takes (256).
  EXPECT_EQ(bp_cuda_attention_fwd(b, b, f, 1, 4, 512, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_attention_bwd(b, b, b, f, b, 1, 4, 264, 1, 0, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // More heads than a grid dimension holds.
  EXPECT_EQ(bp_cuda_attention_fwd_f32(f, f, f, 1, 4, 70000, 70000, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
}

TEST(CudaAttentionArguments, BadDropoutArgumentsAreRejectedOnTheHost) {
  alignas(16) static bp_bf16_t bits[8];
  alignas(16) static float floats[8];
  alignas(16) static int32_t words[4];
  bp_bf16_t *b = bits;
  float *f = floats;
  const int32_t *k = words;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Bad {
    const int32_t *key;
    int32_t site;
    float p;
  };
  for (Bad bad :
       {Bad{k, 0, -0.1f}, Bad{k, 0, 1.0f}, Bad{k, 0, nan}, Bad{k, -1, 0.1f},
        Bad{k, 1 << 24, 0.1f}, Bad{nullptr, 0, 0.1f}, Bad{nullptr, 0, 0.0f}}) {
    EXPECT_EQ(bp_cuda_attention_dropout_fwd(b, b, f, 1, 4, 64, 1, 1, bad.key,
                                            bad.site, bad.p, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "site=" << bad.site << " p=" << bad.p;
    EXPECT_EQ(bp_cuda_attention_dropout_bwd(b, b, b, f, b, 1, 4, 64, 1, 1,
                                            bad.key, bad.site, bad.p, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "site=" << bad.site << " p=" << bad.p;
    EXPECT_EQ(bp_cuda_attention_dropout_fwd_f32(
                  f, f, f, 1, 4, 64, 1, 0, bad.key, bad.site, bad.p, nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "site=" << bad.site << " p=" << bad.p;
    EXPECT_EQ(bp_cuda_attention_dropout_bwd_f32(f, f, f, f, f, 1, 4, 64, 1, 0,
                                                bad.key, bad.site, bad.p,
                                                nullptr),
              BP_ERR_INVALID_ARGUMENT)
        << "site=" << bad.site << " p=" << bad.p;
  }
  // More than 2^40 probabilities, in a shape attention takes (d = 1):
  // B nh T T = 2^12 2^10 2^10 2^10 = 2^42.
  EXPECT_EQ(bp_cuda_attention_dropout_fwd(b, b, f, 1 << 12, 1 << 10, 1 << 10,
                                          1 << 10, 1, k, 0, 0.1f, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // Attention's own checks still apply: H not divisible by nh.
  EXPECT_EQ(bp_cuda_attention_dropout_fwd_f32(f, f, f, 1, 4, 100, 3, 1, k, 0,
                                              0.1f, nullptr),
            BP_ERR_INVALID_ARGUMENT);
}

} // namespace
