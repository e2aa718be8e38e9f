//===- CudaKernels.cpp - bitpipe-gpu-kernel-rates on the CUDA target ------===//
//
// What bitpipe-gpu-kernel-rates times (RateTarget.h): the bf16 calls a
// compiled stage function of the CUDA target makes, on one non-blocking
// stream that is also the execution context's (bp_cuda_set_stream).
//  - linear: bp_cuda_linear_fwd, bp_cuda_linear_bwd_input and
//    bp_cuda_linear_bwd_weight (cuBLASLt; fp32 accumulators), no bias;
//  - attention: runtime.h's bp_attention_fwd_bf16 and _bwd_bf16, so that
//    the rate is that of whichever implementation a run would use (cuDNN's
//    where it supports the shape, else the project's; BITPIPE_CUDA_ATTENTION
//    chooses as it does for a run);
//  - other: bp_cuda_layer_norm_fwd and _bwd, bp_cuda_gelu_fwd and _bwd and
//    bp_cuda_add_fwd.
// Operands come from the device pool, random bf16 values (DeviceOperands.h).
// A call is timed with CUDA events around a batch of calls back to back, as
// a step runs them (a lone call would count the host's launch latency as
// the kernel's), the batch about a millisecond long; the rate is the FLOPs
// over the median batch's time per call. The untimed first call chooses
// cuBLASLt's algorithm and builds cuDNN's plan for the shape.
//
// Runs on the GPU machine (bench/gpu/check.sh), one process: --jobs 1.
//
//===----------------------------------------------------------------------===//

#include "RateTarget.h"

#include "DeviceOperands.h"

#include "bitpipe/cuda.h"
#include "bitpipe/runtime.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace bitpipe::bench::gpu;

namespace bitpipe::bench {

const TargetInfo kTarget = {"bitpipe-gpu-kernel-rates",
                            "the CUDA target's bf16 kernels",
                            /*threads=*/false, /*maxJobs=*/1};

namespace {

/// The fewest timed batches a rate is the median of.
constexpr size_t kMinSamples = 3;
/// A timed batch's length to aim for, seconds: long against an event's
/// resolution (about half a microsecond) and the host's launch latency.
constexpr double kBatchSeconds = 1e-3;
constexpr int kMaxBatch = 4096;

class LinearLayer final : public KernelsAt {
public:
  LinearLayer(const LinearShape &s, void *stream)
      : s_(s), stream_(stream), buffers_(stream),
        x_(buffers_.bf16(s.tokens * s.in, 1.0f)),
        w_(buffers_.bf16(s.out * s.in, 0.05f)),
        dy_(buffers_.bf16(s.tokens * s.out, 1.0f)),
        y_(buffers_.bf16Output(s.tokens * s.out)),
        dx_(buffers_.bf16Output(s.tokens * s.in)),
        dw_(buffers_.f32(s.out * s.in)) {}

  std::vector<Timed> kernels() const override {
    const double flops = linearFlops(s_);
    return {
        {flops,
         [this] {
           kernel(bp_cuda_linear_fwd(x_, w_, nullptr, y_, s_.tokens, s_.in,
                                     s_.out, stream_),
                  "bp_cuda_linear_fwd");
         }},
        {flops,
         [this] {
           kernel(bp_cuda_linear_bwd_input(dy_, w_, dx_, s_.tokens, s_.in,
                                           s_.out, stream_),
                  "bp_cuda_linear_bwd_input");
         }},
        // Accumulates into dw call after call, as micro-batches do.
        {flops,
         [this] {
           kernel(bp_cuda_linear_bwd_weight(dy_, x_, dw_, nullptr, s_.tokens,
                                            s_.in, s_.out, stream_),
                  "bp_cuda_linear_bwd_weight");
         }},
    };
  }

private:
  LinearShape s_;
  void *stream_;
  Buffers buffers_;
  bp_bf16_t *x_, *w_, *dy_, *y_, *dx_;
  float *dw_;
};

class AttentionLayer final : public KernelsAt {
public:
  AttentionLayer(const AttentionShape &s, int64_t batch, int64_t heads,
                 void *stream)
      : s_(s), B_(batch), nh_(heads), H_(heads * s.headDim), buffers_(stream),
        qkv_(buffers_.bf16(B_ * s.seqLen * 3 * H_, 1.0f)),
        dout_(buffers_.bf16(B_ * s.seqLen * H_, 1.0f)),
        out_(buffers_.bf16Output(B_ * s.seqLen * H_)),
        dqkv_(buffers_.bf16Output(B_ * s.seqLen * 3 * H_)),
        lse_(buffers_.f32(B_ * nh_ * s.seqLen)) {}

  /// The forward is timed first (the driver times kernels in order), so
  /// the backward reads its out and lse.
  std::vector<Timed> kernels() const override {
    const double flops = attentionForwardFlops(s_, B_, nh_);
    return {{flops, [this] { forward(); }},
            {2 * flops, [this] { backward(); }}};
  }

private:
  void forward() const {
    kernel(bp_attention_fwd_bf16(qkv_, out_, lse_, B_, s_.seqLen, H_, nh_,
                                 s_.causal),
           "bp_attention_fwd_bf16");
  }
  void backward() const {
    kernel(bp_attention_bwd_bf16(qkv_, out_, dout_, lse_, dqkv_, B_, s_.seqLen,
                                 H_, nh_, s_.causal),
           "bp_attention_bwd_bf16");
  }

  AttentionShape s_;
  int64_t B_, nh_, H_;
  Buffers buffers_;
  bp_bf16_t *qkv_, *dout_, *out_, *dqkv_;
  float *lse_;
};

class OtherKernels final : public KernelsAt {
public:
  OtherKernels(int64_t tokens, int64_t dim, void *stream)
      : N_(tokens), H_(dim), stream_(stream), buffers_(stream),
        x_(buffers_.bf16(N_ * H_, 2.0f)), dy_(buffers_.bf16(N_ * H_, 1.0f)),
        gamma_(buffers_.bf16(H_, 1.0f)), beta_(buffers_.bf16(H_, 0.1f)),
        y_(buffers_.bf16Output(N_ * H_)), g_(buffers_.bf16Output(N_ * H_)),
        dx_(buffers_.bf16Output(N_ * H_)), dg_(buffers_.bf16Output(N_ * H_)),
        sum_(buffers_.bf16Output(N_ * H_)), mean_(buffers_.f32(N_)),
        rstd_(buffers_.f32(N_)), dgamma_(buffers_.f32(H_)),
        dbeta_(buffers_.f32(H_)) {}

  std::vector<Timed> kernels() const override {
    return {{kOtherFlopsPerElement * static_cast<double>(N_) * H_, [this] {
               const int64_t n = N_ * H_;
               kernel(bp_cuda_layer_norm_fwd(x_, gamma_, beta_, y_, mean_,
                                             rstd_, N_, H_, 1e-5f, stream_),
                      "bp_cuda_layer_norm_fwd");
               kernel(bp_cuda_layer_norm_bwd(dy_, x_, gamma_, mean_, rstd_, dx_,
                                             dgamma_, dbeta_, N_, H_, stream_),
                      "bp_cuda_layer_norm_bwd");
               kernel(bp_cuda_gelu_fwd(y_, g_, n, stream_), "bp_cuda_gelu_fwd");
               kernel(bp_cuda_gelu_bwd(dy_, y_, dg_, n, stream_),
                      "bp_cuda_gelu_bwd");
               kernel(bp_cuda_add_fwd(x_, g_, sum_, n, stream_),
                      "bp_cuda_add_fwd");
             }}};
  }

private:
  int64_t N_, H_;
  void *stream_;
  Buffers buffers_;
  bp_bf16_t *x_, *dy_, *gamma_, *beta_, *y_, *g_, *dx_, *dg_, *sum_;
  float *mean_, *rstd_, *dgamma_, *dbeta_;
};

class CudaTarget final : public RateTarget {
public:
  CudaTarget() {
    programName() = kTarget.program;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
      die("no usable CUDA device", "bitpipe-gpu-kernel-rates needs one");
    cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              "cudaStreamCreate");
    // runtime.h's calls (the attention) run on the context's stream.
    bp_cuda_set_stream(stream_);
    kernel(bp_cuda_prepare(), "bp_cuda_prepare");
    cudaCheck(cudaEventCreate(&begin_), "cudaEventCreate");
    cudaCheck(cudaEventCreate(&end_), "cudaEventCreate");
    // The operands' uploads ran on the legacy stream, which this
    // non-blocking one does not wait for: each shape's first call below
    // comes after a device-wide wait (settle).
  }
  // The stream and events live as long as the process: blocks freed on the
  // stream stay cached under its handle (cuda.h).

  std::unique_ptr<KernelsAt> linear(const LinearShape &s) override {
    auto k = std::make_unique<LinearLayer>(s, stream_);
    settle();
    return k;
  }
  std::unique_ptr<KernelsAt> attention(const AttentionShape &s, int64_t batch,
                                       int64_t heads) override {
    auto k = std::make_unique<AttentionLayer>(s, batch, heads, stream_);
    settle();
    return k;
  }
  std::unique_ptr<KernelsAt> other(int64_t tokens, int64_t dim) override {
    auto k = std::make_unique<OtherKernels>(tokens, dim, stream_);
    settle();
    return k;
  }

  double medianSeconds(const std::function<void()> &call,
                       double minTime) override {
    call(); // cuBLASLt's algorithm, cuDNN's plan, first touch.
    const double one = timeBatch(call, 1);
    const int batch = static_cast<int>(
        std::clamp(std::ceil(kBatchSeconds / std::max(one, 1e-9)), 1.0,
                   static_cast<double>(kMaxBatch)));
    std::vector<double> samples;
    double spent = 0;
    while (samples.size() < kMinSamples || spent < minTime) {
      const double seconds = timeBatch(call, batch);
      samples.push_back(seconds / batch);
      spent += seconds;
    }
    auto middle = samples.begin() + samples.size() / 2;
    std::nth_element(samples.begin(), middle, samples.end());
    return *middle;
  }

private:
  /// Seconds of \p n calls back to back on the stream.
  double timeBatch(const std::function<void()> &call, int n) {
    cudaCheck(cudaEventRecord(begin_, stream_), "cudaEventRecord");
    for (int i = 0; i < n; ++i)
      call();
    cudaCheck(cudaEventRecord(end_, stream_), "cudaEventRecord");
    cudaCheck(cudaEventSynchronize(end_),
              "cudaEventSynchronize (a kernel failed, or the device did)");
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, begin_, end_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  /// Waits for the whole device: the operands' uploads are done.
  void settle() { cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  cudaStream_t stream_ = nullptr;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
};

} // namespace

std::unique_ptr<RateTarget> makeRateTarget(int64_t) {
  return std::make_unique<CudaTarget>();
}

std::string machineDescription() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    return "an unknown GPU";
  return std::string(prop.name) + " (" +
         std::to_string(prop.multiProcessorCount) + " SMs)";
}

} // namespace bitpipe::bench
