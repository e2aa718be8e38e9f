//===- CudnnAttention.cpp - bp_cudnn_attention_* (bitpipe/cuda.h) ---------===//
//
// Attention through cuDNN's fused flash-attention engines: the graphs of
// CudnnSdpaGraph.cpp, one execution plan per (B, T, H, nh, causal,
// direction) made at start-up (bp_cuda_prepare_attention) or on first use
// and kept for the life of the process (training repeats a handful of
// shapes), executed on the caller's stream with a workspace from the device
// pool. Making a plan compiles its kernel at run time (seconds); so a plan
// made is also stored, serialized, in the plan cache folder
// (bp_cuda_set_plan_cache, core/FileCache.h), from which the next run, or
// another rank of the node, restores it in milliseconds.
//
// The cuDNN handle is created once, lazily, on the device that is current
// then (one device per process, as the pool); its stream is set on every
// call. libcudnn.so.9 is linked, but it loads its sub-libraries (graph,
// engines, heuristics) and NVRTC only when first used, so a machine with an
// incomplete cuDNN gets bp_cudnn_attention_supported() == 0 with the reason
// on stderr rather than a crash.
//
//===----------------------------------------------------------------------===//

#include "CudnnSdpaPlan.h"
#include "core/ArgChecks.h"
#include "core/FileCache.h"
#include "cuda/Launch.h"

#include <cuda_runtime.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::cuda;
using namespace bitpipe::runtime::cuda::cudnn;

namespace {

/// cuDNN 9.6 is where the flash-attention backward stopped needing its fp32
/// dq accumulator cleared by the caller (cudnn-frontend clears it before
/// 9.6; this code does not); cudnn-frontend refuses 9.10.0 and 9.10.1 for
/// known backward bugs, and so does this code.
constexpr size_t kMinCudnnVersion = 90600;
/// Lengths that are not a multiple of 128 need 9.16 (see shapeWhyNot).
constexpr size_t kMinCudnnVersionAnyLength = 91600;
/// The fused flash-attention engines need Ampere (sm_80) or newer.
constexpr int kMinComputeMajor = 8;

using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, int>;

PlanKey keyOf(const SdpaShape &s, SdpaDirection direction) {
  return {s.B, s.T, s.H, s.nh, s.causal, static_cast<int>(direction)};
}

/// A plan, or why there is none (then plan is null).
struct CachedPlan {
  std::unique_ptr<SdpaPlan> plan;
  std::string whyNot;
};

/// Process-wide: the handle and the plans, under one lock (plan building
/// and execution share the handle).
struct CudnnState {
  std::mutex mutex;
  bool handleTried = false;
  cudnnHandle_t handle = nullptr;
  std::string handleWhyNot; // why there is no handle, once tried
  bool deviceReported = false; // handleWhyNot printed
  /// What a serialized plan was made for besides its shape: cuDNN's
  /// version, the graphs' version and the device (its architecture, SM
  /// count and name), as a cache key's prefix; set with the handle.
  std::string keyPrefix;
  std::string cacheDir; // "" for no plan cache (bp_cuda_set_plan_cache)
  std::map<PlanKey, CachedPlan> plans;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, bool>> reported;
  bp_cuda_plan_stats stats{};
};

/// \p text with every character a cache key may not hold as '_'.
std::string keySafe(const std::string &text) {
  std::string out;
  for (char c : text)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                   c == '-' || c == '+'
               ? c
               : '_';
  return out;
}

/// "cudnn91600-g1-sm90-132sm-NVIDIA_H200-", from the current device.
std::string keyPrefixFor(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return "cudnn" + std::to_string(cudnnGetVersion()) + "-g" +
         std::to_string(kSdpaGraphVersion) + "-sm" + std::to_string(p.major) +
         std::to_string(p.minor) + "-" +
         std::to_string(p.multiProcessorCount) + "sm-" + keySafe(p.name) + "-";
}

/// The cache key of one plan: the state's prefix, then the shape.
std::string cacheKey(const CudnnState &st, const SdpaShape &s,
                     SdpaDirection direction) {
  return st.keyPrefix + "sdpa-" +
         (direction == SdpaDirection::Forward ? "fwd" : "bwd") + "-B" +
         std::to_string(s.B) + "-T" + std::to_string(s.T) + "-H" +
         std::to_string(s.H) + "-nh" + std::to_string(s.nh) +
         (s.causal ? "-causal" : "-full");
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

CudnnState &state() {
  static CudnnState *s = new CudnnState(); // never destroyed: no teardown
  return *s;                               // order issues at exit
}

/// Why this process cannot use cuDNN attention at all, or "" (creating the
/// handle on first call). Caller holds the lock.
const std::string &deviceWhyNot(CudnnState &st) {
  if (st.handleTried)
    return st.handleWhyNot;
  st.handleTried = true;
  const size_t version = cudnnGetVersion();
  if (version < kMinCudnnVersion || version == 91000 || version == 91001) {
    st.handleWhyNot = "cuDNN " + std::to_string(version) +
                      " is loaded; fused attention needs 9.6 or newer "
                      "(not 9.10.0 or 9.10.1)";
    return st.handleWhyNot;
  }
  int device = 0, major = 0, minor = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                 device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                                 device);
  if (err != cudaSuccess) {
    st.handleWhyNot = std::string("no usable CUDA device (") +
                      cudaGetErrorString(err) + ")";
    return st.handleWhyNot;
  }
  if (major < kMinComputeMajor) {
    st.handleWhyNot = "device " + std::to_string(device) + " is sm_" +
                      std::to_string(major) + std::to_string(minor) +
                      "; cuDNN's fused attention needs sm_80 or newer";
    return st.handleWhyNot;
  }
  Builder b;
  cudnnHandle_t handle = nullptr;
  if (!b.check(cudnnCreate(&handle), "cudnnCreate")) {
    st.handleWhyNot = b.failure();
    return st.handleWhyNot;
  }
  st.handle = handle;
  st.keyPrefix = keyPrefixFor(device);
  return st.handleWhyNot;
}

/// The plan of \p key restored from the cache folder into \p plan, if it
/// is there and cuDNN takes it back; a damaged or refused entry is said on
/// stderr (it is then made and stored afresh).
bool restore(CudnnState &st, const SdpaShape &shape, SdpaDirection direction,
             const std::string &key, SdpaPlan &plan) {
  if (st.cacheDir.empty() || st.keyPrefix.empty())
    return false;
  const auto start = std::chrono::steady_clock::now();
  FileCache::Lookup entry = FileCache(st.cacheDir).load(key);
  std::string why = entry.problem;
  if (entry.bytes) {
    why = loadSdpaPlan(shape, direction, st.handle, *entry.bytes, plan);
    if (why.empty()) {
      ++st.stats.loaded;
      st.stats.load_seconds += secondsSince(start);
      return true;
    }
    why = "cuDNN refused the plan in '" + FileCache(st.cacheDir).pathOf(key) +
          "': " + why;
  }
  if (!why.empty()) {
    std::fprintf(stderr, "bitpipe: cudnn attention: plan cache: %s; "
                         "building the plan again\n",
                 why.c_str());
    std::fflush(stderr);
  }
  return false;
}

/// Stores \p plan in the cache folder; a failure is a note on stderr (the
/// run goes on: the next one builds the plan again).
void store(CudnnState &st, const std::string &key, const SdpaPlan &plan) {
  if (st.cacheDir.empty() || st.keyPrefix.empty())
    return;
  std::string json;
  std::string why = serializeSdpaPlan(plan, json);
  if (why.empty()) {
    Status s = FileCache(st.cacheDir).store(key, json);
    if (!s.isOk())
      why = s.message();
  } else {
    why = "cuDNN cannot serialize the plan of " + key + ": " + why;
  }
  if (!why.empty()) {
    std::fprintf(stderr, "bitpipe: cudnn attention: plan cache: %s\n",
                 why.c_str());
    std::fflush(stderr);
  }
}

/// The cached plan of `shape` and `direction`, building it on first ask.
/// Caller holds the lock and has a handle.
const CachedPlan &planFor(CudnnState &st, const SdpaShape &shape,
                          SdpaDirection direction) {
  auto [it, inserted] = st.plans.try_emplace(keyOf(shape, direction));
  if (inserted) {
    auto plan = std::make_unique<SdpaPlan>();
    const std::string key = cacheKey(st, shape, direction);
    if (restore(st, shape, direction, key, *plan)) {
      it->second.plan = std::move(plan);
      return it->second;
    }
    const auto start = std::chrono::steady_clock::now();
    it->second.whyNot =
        buildSdpaPlan(shape, direction, st.handle, nullptr, *plan);
    st.stats.build_seconds += secondsSince(start);
    if (it->second.whyNot.empty()) {
      ++st.stats.built;
      store(st, key, *plan);
      it->second.plan = std::move(plan);
    }
  }
  return it->second;
}

/// Shape limits of the engines, checked before asking cuDNN so that the
/// reason is plain: head size a multiple of 8 up to 128 (every 16-byte
/// vector of a row is whole; 128 is the largest the Hopper and Blackwell
/// engines all take), and T > 1 (cuDNN rejects T = 1 for both lengths).
std::string shapeWhyNot(const SdpaShape &s) {
  const int64_t d = s.d();
  if (d % 8 != 0 || d > 128)
    return "head size d = H / nh = " + std::to_string(d) +
           " must be a multiple of 8 and at most 128";
  if (s.T < 2)
    return "T must be at least 2";
  // Before 9.16 the backward needs a padding mask when T is not a multiple
  // of 128 (cudnn-frontend adds one for those versions; these graphs have
  // none).
  if (s.T % 128 != 0 && cudnnGetVersion() < kMinCudnnVersionAnyLength)
    return "T = " + std::to_string(s.T) +
           " is not a multiple of 128, which needs cuDNN 9.16 or newer";
  return "";
}

/// Whether both plans of `shape` exist, saying why not on stderr the first
/// time a shape is refused (once in all when the device or cuDNN is the
/// reason). Caller holds the lock.
bool supportedLocked(CudnnState &st, const SdpaShape &shape) {
  if (const std::string &why = deviceWhyNot(st); !why.empty()) {
    if (!st.deviceReported) {
      st.deviceReported = true;
      std::fprintf(stderr, "bitpipe: cudnn attention: not available: %s\n",
                   why.c_str());
      std::fflush(stderr);
    }
    return false;
  }
  std::string why = shapeWhyNot(shape);
  if (why.empty())
    why = planFor(st, shape, SdpaDirection::Forward).whyNot;
  if (why.empty())
    why = planFor(st, shape, SdpaDirection::Backward).whyNot;
  if (why.empty())
    return true;
  if (st.reported
          .insert({shape.B, shape.T, shape.H, shape.nh, shape.causal})
          .second) {
    std::fprintf(stderr,
                 "bitpipe: cudnn attention: not available for %s: %s\n",
                 shape.describe().c_str(), why.c_str());
    std::fflush(stderr);
  }
  return false;
}

bool validShape(int64_t B, int64_t T, int64_t H, int64_t nh) {
  return allPositive({B, T, H, nh}) && H % nh == 0;
}

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// The host scalars the graphs take by value (read by cudnnBackendExecute
/// before it returns): the score scale 1/sqrt(d), the masked score, and 1.
/// Before cuDNN 9.10 the engines want the lowest finite float as the masked
/// score rather than -inf (as cudnn-frontend passes them).
struct Scalars {
  float scale, negInf, one;
  explicit Scalars(const SdpaShape &shape)
      : scale(1.0f / std::sqrt(static_cast<float>(shape.d()))),
        negInf(cudnnGetVersion() < 91000
                   ? std::numeric_limits<float>::lowest()
                   : -std::numeric_limits<float>::infinity()),
        one(1.0f) {}
};

/// Executes `direction`'s plan with the given variant-pack entries: one
/// pool block holds the graph's own scratch, then the engine's workspace.
bp_status_t execute(CudnnState &st, const SdpaShape &shape,
                    SdpaDirection direction, std::map<int64_t, void *> ptrs,
                    void *stream) {
  const CachedPlan &cached = planFor(st, shape, direction);
  if (!cached.plan) {
    std::fprintf(stderr, "bitpipe: cudnn attention %s: no plan for %s: %s\n",
                 directionName(direction), shape.describe().c_str(),
                 cached.whyNot.c_str());
    return BP_ERR_INVALID_ARGUMENT;
  }
  const SdpaPlan &plan = *cached.plan;
  const int64_t scratch = sdpaScratchBytes(shape, direction);
  const int64_t total = scratch + plan.workspaceBytes;
  char *block = nullptr;
  if (total > 0) {
    block = static_cast<char *>(bp_cuda_alloc(total, stream));
    if (!block)
      return BP_ERR_OUT_OF_MEMORY;
  }
  if (direction == SdpaDirection::Backward) {
    ptrs[kUidSoftmaxSum] = block;
    ptrs[kUidDQAccum] = block + sdpaDQAccumOffset(shape);
  }

  Builder b;
  b.check(cudnnSetStream(st.handle, asStream(stream)), "cudnnSetStream");
  Descriptor pack = makeVariantPack(
      b, plan.graph, ptrs, plan.workspaceBytes > 0 ? block + scratch : nullptr);
  if (b.ok())
    b.check(cudnnBackendExecute(st.handle, plan.plan.get(), pack.get()),
            "cudnnBackendExecute");
  // Stream-ordered: the block is reused only by later work on `stream`.
  bp_cuda_free(block, stream);
  if (!b.ok()) {
    std::fprintf(stderr, "bitpipe: cudnn attention %s (%s): %s\n",
                 directionName(direction), shape.describe().c_str(),
                 b.failure().c_str());
    std::fflush(stderr);
    return BP_ERR_DEVICE;
  }
  return checkLaunch(direction == SdpaDirection::Forward
                         ? "bp_cudnn_attention_fwd"
                         : "bp_cudnn_attention_bwd");
}

/// Checks shared by the two calls; BP_OK when `shape` can run.
bp_status_t admit(CudnnState &st, const SdpaShape &shape, const char *fn) {
  if (!supportedLocked(st, shape)) {
    std::fprintf(stderr,
                 "bitpipe: %s: cuDNN attention is not available for %s "
                 "(bp_cudnn_attention_supported returns 0)\n",
                 fn, shape.describe().c_str());
    std::fflush(stderr);
    return BP_ERR_INVALID_ARGUMENT;
  }
  return BP_OK;
}

} // namespace

namespace bitpipe::runtime::cuda::cudnn {
void forgetPlans() {
  CudnnState &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.plans.clear();
  st.reported.clear();
}
} // namespace bitpipe::runtime::cuda::cudnn

extern "C" void bp_cuda_set_plan_cache(const char *dir) {
  CudnnState &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.cacheDir = dir ? dir : "";
}

extern "C" void bp_cuda_get_plan_stats(bp_cuda_plan_stats *out) {
  if (!out)
    return;
  CudnnState &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  *out = st.stats;
}

extern "C" int32_t bp_cudnn_attention_supported(int64_t B, int64_t T,
                                                int64_t H, int64_t nh,
                                                int32_t causal) {
  if (!validShape(B, T, H, nh))
    return 0;
  CudnnState &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return supportedLocked(st, SdpaShape{B, T, H, nh, causal != 0}) ? 1 : 0;
}

extern "C" bp_status_t bp_cudnn_attention_fwd(const bp_bf16_t *qkv,
                                              bp_bf16_t *out, float *lse,
                                              int64_t B, int64_t T, int64_t H,
                                              int64_t nh, int32_t causal,
                                              void *stream) {
  if (!allNonNull({qkv, out, lse}) || !validShape(B, T, H, nh) ||
      !aligned16(qkv) || !aligned16(out) || !aligned16(lse)) {
    std::fprintf(stderr,
                 "bitpipe: bp_cudnn_attention_fwd: expected non-null, "
                 "16-byte aligned qkv, out, lse and B, T, H, nh > 0 with nh "
                 "dividing H\n");
    return BP_ERR_INVALID_ARGUMENT;
  }
  const SdpaShape shape{B, T, H, nh, causal != 0};
  CudnnState &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (bp_status_t s = admit(st, shape, "bp_cudnn_attention_fwd"); s != BP_OK)
    return s;
  Scalars scalars(shape);
  auto *base = const_cast<bp_bf16_t *>(qkv);
  return execute(st, shape, SdpaDirection::Forward,
                 {{kUidQ, base},
                  {kUidK, base + H},
                  {kUidV, base + 2 * H},
                  {kUidO, out},
                  {kUidStats, lse},
                  {kUidScale, &scalars.scale},
                  {kUidNegInf, &scalars.negInf}},
                 stream);
}

extern "C" bp_status_t
bp_cudnn_attention_bwd(const bp_bf16_t *qkv, const bp_bf16_t *out,
                       const bp_bf16_t *dout, const float *lse,
                       bp_bf16_t *dqkv, int64_t B, int64_t T, int64_t H,
                       int64_t nh, int32_t causal, void *stream) {
  if (!allNonNull({qkv, out, dout, lse, dqkv}) || !validShape(B, T, H, nh) ||
      !aligned16(qkv) || !aligned16(out) || !aligned16(dout) ||
      !aligned16(lse) || !aligned16(dqkv)) {
    std::fprintf(stderr,
                 "bitpipe: bp_cudnn_attention_bwd: expected non-null, "
                 "16-byte aligned qkv, out, dout, lse, dqkv and B, T, H, "
                 "nh > 0 with nh dividing H\n");
    return BP_ERR_INVALID_ARGUMENT;
  }
  const SdpaShape shape{B, T, H, nh, causal != 0};
  CudnnState &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (bp_status_t s = admit(st, shape, "bp_cudnn_attention_bwd"); s != BP_OK)
    return s;
  Scalars scalars(shape);
  auto *base = const_cast<bp_bf16_t *>(qkv);
  return execute(st, shape, SdpaDirection::Backward,
                 {{kUidQ, base},
                  {kUidK, base + H},
                  {kUidV, base + 2 * H},
                  {kUidO, const_cast<bp_bf16_t *>(out)},
                  {kUidDO, const_cast<bp_bf16_t *>(dout)},
                  {kUidStats, const_cast<float *>(lse)},
                  {kUidDQ, dqkv},
                  {kUidDK, dqkv + H},
                  {kUidDV, dqkv + 2 * H},
                  {kUidScale, &scalars.scale},
                  {kUidNegInf, &scalars.negInf},
                  {kUidOne, &scalars.one}},
                 stream);
}
