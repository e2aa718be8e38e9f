//===- CudnnAttentionTest.cpp - cuDNN fused attention against float64 ----===//
//
// bp_cudnn_attention_fwd / _bwd (bitpipe/cuda.h) against a float64 host
// reference of runtime.h's attention, at head sizes 64 and 128, lengths
// that are not multiples of 64 (100, 129) and one that is (256), causal and
// bidirectional, B and nh > 1; outputs start poisoned with NaN, so every
// element of out, lse and dqkv must be written.
//
// Tolerances (allClose's criterion, CudaTestUtil.h):
//  - out: kBf16Rtol (1e-2). cuDNN rounds the probabilities to bf16 before
//    P V and rounds out once: two roundings of at most 2^-9 relative.
//  - dqkv: 2e-2. The probabilities and dS are rounded to bf16 before each
//    of the three backward products, on top of the output's rounding, and
//    dq, dk are sums over T of terms that largely cancel (sum_j dS_ij = 0).
//  - lse: kFp32Rtol (1e-3); it is fp32, from fp32 sums of exact products
//    of bf16 values. A log2-based or unscaled lse would miss by > 30%.
//
// Without a device the numerical tests skip; they also skip, saying so,
// when bp_cudnn_attention_supported is 0 (the reason is on stderr). Two
// groups run everywhere: the host-side argument checks, and the graph
// tests, which build the forward and backward operation graphs on the CPU
// (cuDNN creates and finalizes descriptors without a device) and, where
// libcuda.so.1 can be loaded, ask cuDNN's heuristics for engines for an
// H200 described by its device properties: the fused attention engines
// then pattern-match the graphs and compile their kernels with NVRTC, and
// only loading the compiled module needs the device. ctest also runs that
// group with the CUDA toolkit's driver stub (see CMakeLists.txt), which
// makes this check possible on a machine without a GPU.
//
// bench/gpu/check.sh runs the numerical tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "Reference.h"
#include "attention/CudnnSdpaPlan.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;
namespace cudnn = bitpipe::runtime::cuda::cudnn;

namespace {

/// dqkv's tolerance (see the header comment).
constexpr double kAttentionGradRtol = 2e-2;

//===----------------------------------------------------------------------===//
// Numerical tests (need a device and cuDNN's engines).
//===----------------------------------------------------------------------===//

struct SdpaCase {
  int64_t B, T, nh, d;
  bool causal;
};

void PrintTo(const SdpaCase &c, std::ostream *os) {
  *os << "B=" << c.B << " T=" << c.T << " nh=" << c.nh << " d=" << c.d
      << (c.causal ? " causal" : " bidirectional");
}

std::string sdpaCaseName(const ::testing::TestParamInfo<SdpaCase> &info) {
  const SdpaCase &c = info.param;
  return "B" + std::to_string(c.B) + "_T" + std::to_string(c.T) + "_nh" +
         std::to_string(c.nh) + "_d" + std::to_string(c.d) +
         (c.causal ? "_causal" : "_bidir");
}

class CudnnAttention : public CudaTest,
                       public ::testing::WithParamInterface<SdpaCase> {};

TEST_P(CudnnAttention, ForwardAndBackwardMatchReference) {
  const auto [B, T, nh, d, causal] = GetParam();
  const int64_t H = nh * d;
  if (!bp_cudnn_attention_supported(B, T, H, nh, causal))
    GTEST_SKIP() << "bp_cudnn_attention_supported is 0 for this shape on "
                    "this machine (the reason is on stderr)";
  const std::string shape = "B=" + std::to_string(B) +
                            ",T=" + std::to_string(T) +
                            ",H=" + std::to_string(H) +
                            ",nh=" + std::to_string(nh) +
                            (causal ? ",causal" : ",bidir");
  const uint32_t seed = static_cast<uint32_t>(B * 7919 + T * 131 + H + causal);
  // q and k in [-2, 2]: scaled scores with a spread of about 1.3, so the
  // softmax is far from uniform and a wrong scale or log base shows.
  auto qkv = randomBf16Values(B * T * 3 * H, seed, -2.0f, 2.0f);
  auto dout = randomBf16Values(B * T * H, seed + 1);

  DeviceBuffer<bp_bf16_t> dQkv(toBf16(qkv)), dDout(toBf16(dout)), dOut(B * T * H),
      dDqkv(B * T * 3 * H);
  DeviceBuffer<float> dLse(B * nh * T);
  ASSERT_EQ(bp_cudnn_attention_fwd(dQkv.get(), dOut.get(), dLse.get(), B, T, H,
                                   nh, causal, stream()),
            BP_OK);
  ASSERT_EQ(bp_cudnn_attention_bwd(dQkv.get(), dOut.get(), dDout.get(),
                                   dLse.get(), dDqkv.get(), B, T, H, nh,
                                   causal, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  const auto qkvD = toDouble(qkv);
  std::vector<double> lse;
  const auto out = ref::attention(qkvD, B, T, H, nh, causal, &lse);
  const auto dqkv =
      ref::attentionGrad(qkvD, out, toDouble(dout), B, T, H, nh, causal);
  EXPECT_TRUE(checkClose("cudnn_attention_fwd", "out", shape,
                         fromBf16(dOut.download()), out, kBf16Rtol));
  EXPECT_TRUE(checkClose("cudnn_attention_fwd", "lse", shape, dLse.download(),
                         lse, kFp32Rtol));
  EXPECT_TRUE(checkClose("cudnn_attention_bwd", "dqkv", shape,
                         fromBf16(dDqkv.download()), dqkv,
                         kAttentionGradRtol));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudnnAttention,
    ::testing::Values(SdpaCase{2, 100, 2, 64, true},
                      SdpaCase{2, 100, 2, 64, false},
                      SdpaCase{1, 129, 3, 128, true},
                      SdpaCase{2, 129, 2, 128, false},
                      SdpaCase{2, 256, 4, 64, true}),
    sdpaCaseName);

//===----------------------------------------------------------------------===//
// The plan cache (bp_cuda_set_plan_cache): plans built once are restored.
//===----------------------------------------------------------------------===//

class CudnnPlanCache : public CudaTest {
protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped())
      return;
    char tmpl[] = "/tmp/bitpipe-plans-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    bp_cuda_set_plan_cache(dir_.c_str());
  }
  void TearDown() override {
    bp_cuda_set_plan_cache(nullptr);
    if (!dir_.empty())
      (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  static bp_cuda_plan_stats stats() {
    bp_cuda_plan_stats s{};
    bp_cuda_get_plan_stats(&s);
    return s;
  }
  /// The plan files in the folder.
  int entries() const {
    int n = 0;
    if (DIR *d = ::opendir(dir_.c_str())) {
      while (dirent *e = ::readdir(d))
        n += std::string(e->d_name).rfind("cudnn", 0) == 0;
      ::closedir(d);
    }
    return n;
  }
  std::string dir_;
};

// A shape no other test uses: its two plans are built and stored, then,
// forgotten, restored from the folder, and the restored forward writes the
// same bits as the built one.
TEST_F(CudnnPlanCache, BuiltPlansAreStoredAndRestoredToTheSameBits) {
  const int64_t B = 1, T = 128, nh = 2, H = 2 * 64;
  const bp_cuda_plan_stats before = stats();
  if (!bp_cudnn_attention_supported(B, T, H, nh, 1))
    GTEST_SKIP() << "bp_cudnn_attention_supported is 0 for this shape on "
                    "this machine (the reason is on stderr)";
  const bp_cuda_plan_stats built = stats();
  EXPECT_EQ(built.built - before.built, 2);
  EXPECT_EQ(built.loaded - before.loaded, 0);
  EXPECT_EQ(entries(), 2);

  auto qkv = randomBf16Values(B * T * 3 * H, 991, -2.0f, 2.0f);
  DeviceBuffer<bp_bf16_t> dQkv(toBf16(qkv)), dOut(B * T * H);
  DeviceBuffer<float> dLse(B * nh * T);
  auto forward = [&] {
    EXPECT_EQ(bp_cudnn_attention_fwd(dQkv.get(), dOut.get(), dLse.get(), B, T,
                                     H, nh, 1, stream()),
              BP_OK);
    EXPECT_EQ(bp_cuda_synchronize(stream()), BP_OK);
    return std::make_pair(dOut.download(), dLse.download());
  };
  const auto first = forward();

  cudnn::forgetPlans();
  ASSERT_TRUE(bp_cudnn_attention_supported(B, T, H, nh, 1));
  const bp_cuda_plan_stats restored = stats();
  EXPECT_EQ(restored.built, built.built);
  EXPECT_EQ(restored.loaded - built.loaded, 2);
  const auto second = forward();
  EXPECT_EQ(first.first, second.first);
  EXPECT_EQ(first.second, second.second);
}

// A damaged entry is said on stderr and the plan is built (and stored)
// again.
TEST_F(CudnnPlanCache, ADamagedEntryIsBuiltAgain) {
  const int64_t B = 1, T = 256, nh = 2, H = 2 * 64;
  if (!bp_cudnn_attention_supported(B, T, H, nh, 0))
    GTEST_SKIP() << "bp_cudnn_attention_supported is 0 for this shape on "
                    "this machine (the reason is on stderr)";
  ASSERT_EQ(entries(), 2);
  // Cut every entry short.
  if (DIR *d = ::opendir(dir_.c_str())) {
    while (dirent *e = ::readdir(d)) {
      if (std::string(e->d_name).rfind("cudnn", 0) == 0) {
        EXPECT_EQ(::truncate((dir_ + "/" + e->d_name).c_str(), 40), 0);
      }
    }
    ::closedir(d);
  }
  const bp_cuda_plan_stats before = stats();
  cudnn::forgetPlans();
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(bp_cudnn_attention_supported(B, T, H, nh, 0));
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("plan cache"), std::string::npos) << said;
  EXPECT_NE(said.find("truncated"), std::string::npos) << said;
  EXPECT_EQ(stats().built - before.built, 2);
  EXPECT_EQ(stats().loaded, before.loaded);
}

//===----------------------------------------------------------------------===//
// Host-side checks (run everywhere).
//===----------------------------------------------------------------------===//

TEST(CudnnAttentionArgs, BadShapesAreNotSupported) {
  EXPECT_EQ(bp_cudnn_attention_supported(0, 16, 128, 2, 1), 0);
  EXPECT_EQ(bp_cudnn_attention_supported(2, 16, 130, 4, 1), 0); // 4 does not divide 130
  EXPECT_EQ(bp_cudnn_attention_supported(2, -1, 128, 2, 0), 0);
}

TEST(CudnnAttentionArgs, NullOrMisalignedPointersAreRejected) {
  alignas(16) static bp_bf16_t buf[64];
  alignas(16) static float stats[16];
  EXPECT_EQ(bp_cudnn_attention_fwd(nullptr, buf, stats, 1, 2, 8, 1, 1,
                                   nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cudnn_attention_fwd(buf + 1, buf, stats, 1, 2, 8, 1, 1,
                                   nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cudnn_attention_bwd(buf, buf, buf, stats, nullptr, 1, 2, 8, 1,
                                   1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cudnn_attention_bwd(buf, buf, buf, stats, buf, 1, 2, 9, 2, 1,
                                   nullptr),
            BP_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// The graphs, built on the CPU.
//===----------------------------------------------------------------------===//

/// The device properties of an H200 (sm_90, 132 SMs, 227 KiB of opt-in
/// shared memory per block, 50 MiB of L2), in the JSON form of
/// CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, for cuDNN's heuristics and
/// engines without a device. The engines check the compute capability and
/// shared memory; the rest only steers the heuristics' ranking.
const char *const kH200DeviceProperties = R"({
  "maxGridSize": [2147483647, 65535, 65535], "maxBlockSize": [1024, 1024, 64],
  "regsPerBlock": 65536, "multiProcessorCount": 132, "warpSize": 32,
  "maxSharedMemoryPerBlock": 49152, "maxSharedMemoryPerBlockOptin": 232448,
  "reservedSharedMemoryPerBlock": 1024, "maxRegistersPerSM": 65536,
  "maxCtasPerSM": 32, "maxThreadsPerBlock": 1024, "maxThreadsPerSM": 2048,
  "pciDeviceId": 8997, "isTccDriver": 0, "supportCoopLaunch": 1,
  "totalGlobalMem": 150754820096, "smClockRateKHz": 1980000,
  "memClockRateKHz": 3201000, "l2CacheSize": 52428800, "cudaDeviceId": 0,
  "deviceVer": 900, "driverVer": 13000, "deviceName": "NVIDIA H200"})";

struct GraphCase {
  cudnn::SdpaShape shape;
  cudnn::SdpaDirection direction;
};

/// Both directions of: d = 64 causal and d = 128 bidirectional, at lengths
/// that are not multiples of 64 (all four (d, mask) pairs for the
/// descriptor test).
std::vector<GraphCase> graphCases(bool allPairs) {
  std::vector<GraphCase> cases;
  for (auto dir :
       {cudnn::SdpaDirection::Forward, cudnn::SdpaDirection::Backward}) {
    cases.push_back({{2, 100, 256, 4, true}, dir});
    cases.push_back({{1, 129, 384, 3, false}, dir});
    if (allPairs) {
      cases.push_back({{2, 100, 256, 4, false}, dir});
      cases.push_back({{1, 129, 384, 3, true}, dir});
    }
  }
  return cases;
}

std::string describe(const GraphCase &c) {
  return c.shape.describe() + " " + cudnn::directionName(c.direction);
}

TEST(CudnnSdpaGraphs, EveryDescriptorIsAccepted) {
  for (const GraphCase &c : graphCases(/*allPairs=*/true)) {
    cudnn::Builder b;
    cudnn::SdpaGraph g;
    EXPECT_TRUE(cudnn::buildSdpaGraph(b, c.shape, c.direction, nullptr, g))
        << describe(c) << ": " << b.failure();
    // The variant pack names exactly the graph's non-virtual tensors.
    std::set<int64_t> uids(g.uids.begin(), g.uids.end());
    std::set<int64_t> expected =
        c.direction == cudnn::SdpaDirection::Forward
            ? std::set<int64_t>{cudnn::kUidQ, cudnn::kUidK, cudnn::kUidV,
                                cudnn::kUidO, cudnn::kUidStats,
                                cudnn::kUidScale}
            : std::set<int64_t>{cudnn::kUidQ,     cudnn::kUidK,
                                cudnn::kUidV,     cudnn::kUidO,
                                cudnn::kUidDO,    cudnn::kUidStats,
                                cudnn::kUidDQ,    cudnn::kUidDK,
                                cudnn::kUidDV,    cudnn::kUidScale,
                                cudnn::kUidOne,   cudnn::kUidSoftmaxSum,
                                cudnn::kUidDQAccum};
    if (c.shape.causal)
      expected.insert(cudnn::kUidNegInf);
    EXPECT_EQ(uids, expected) << describe(c);
    EXPECT_EQ(uids.size(), g.uids.size()) << describe(c) << ": repeated uid";

    // The variant pack takes an address per uid (never dereferenced here)
    // and refuses a graph tensor without one.
    std::map<int64_t, void *> addresses;
    for (int64_t uid : uids)
      addresses[uid] = reinterpret_cast<void *>(uintptr_t(uid) << 12);
    cudnn::Builder packed;
    EXPECT_TRUE(cudnn::makeVariantPack(packed, g, addresses,
                                       reinterpret_cast<void *>(1 << 20)))
        << describe(c) << ": " << packed.failure();
    addresses.erase(cudnn::kUidStats);
    cudnn::Builder missing;
    EXPECT_FALSE(cudnn::makeVariantPack(missing, g, addresses, nullptr));
    EXPECT_NE(missing.failure().find("uid 5"), std::string::npos)
        << missing.failure();
  }
}

TEST(CudnnSdpaGraphs, FusedEnginesCompileThemForAnH200) {
  // cuDNN's engines load the driver to check and compile; without one
  // every engine is filtered out before it looks at the graph.
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver)
    GTEST_SKIP() << "libcuda.so.1 cannot be loaded (" << dlerror()
                 << "); ctest's CudnnSdpaGraphs.WithDriverStub runs this "
                    "with the CUDA toolkit's stub";
  dlclose(driver);

  cudnn::Builder b;
  cudnn::Descriptor props = b.create(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR,
                                     "device properties");
  b.setChars(props, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
             kH200DeviceProperties, "CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION");
  b.finalize(props, "device properties");
  ASSERT_TRUE(b.ok()) << b.failure();

  // Each plan compiles every engine configuration the heuristics propose
  // when none loads (a few seconds each): two shapes keep this short.
  for (const GraphCase &c : graphCases(/*allPairs=*/false)) {
    cudnn::SdpaPlan plan;
    const std::string why = cudnn::buildSdpaPlan(c.shape, c.direction, nullptr,
                                                 props.get(), plan);
    // With a real driver the plan finalizes (the module loads on the
    // device, whatever it is); with the stub, NVRTC has compiled the
    // engine's kernel for the graph and only cuLibraryLoadData fails.
    EXPECT_TRUE(why.empty() ||
                why.find("CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER") !=
                    std::string::npos)
        << describe(c) << ": " << why;
  }
}

} // namespace
