//===- block-bench.cpp - One GPT block, forward + backward, on the GPU ----===//
//
//   bitpipe-gpu-block-bench [--shapes H,nh,T,B[;H,nh,T,B...]] [--warmup K]
//                           [--iters K] [--attention own|cudnn|both]
//                           [--breakdown]
//
// Times one GPT block (pre-LN, fused qkv, causal attention, output
// projection, residual, layer norm, 4H MLP with tanh GELU, residual) forward
// and backward through bitpipe/cuda.h's bf16 kernels, the calls a compiled
// stage function makes for one layer, and prints its TFLOP/s by
// bench/gpu/flops.py's formula (the one torch_block.py divides by too), once
// per shape and attention implementation: the project's own kernels and,
// where bp_cudnn_attention_supported says so, cuDNN's.
//
// One line per measurement, for bench/gpu/check.sh to read:
//   BPBENCH block H=1024 nh=16 T=1024 B=8 attn=own fwd_ms=.. bwd_ms=..
//           ms=.. tflops=..
// or "BPBENCH block ... attn=cudnn unsupported"; with --breakdown, then one
// line per kernel call of the block, its median time over further
// iterations with an event pair around each call:
//   BPOP H=1024 nh=16 T=1024 B=8 attn=own ms=.. op=bp_cuda_linear_fwd (qkv)
//   Times are medians over the
// timed iterations, from CUDA events around each iteration's forward and
// backward on one stream, after warm-up iterations (which choose cuBLASLt's
// algorithms and build cuDNN's plans). Inputs are random (values that a
// trained model's layer sees, roughly): all-zero operands would make the
// tensor cores draw less power and run faster than in training.
//
// Exit status: 0 measured; 1 a kernel failed (its name is printed); 2 usage
// or no device.
//
//===----------------------------------------------------------------------===//

#include "DeviceOperands.h"

#include "bitpipe/cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Shape {
  int64_t hidden, heads, seqLen, batch;
};

/// bench/gpu/flops.py's block_flops, repeated: the linear layers 72 N H^2
/// (forward + backward), attention 3 x 4 B T^2 H, halved for causal.
double blockFlops(const Shape &s, bool causal) {
  double n = double(s.batch) * double(s.seqLen);
  double h = double(s.hidden);
  double matmuls = 72.0 * n * h * h;
  double attention =
      12.0 * double(s.batch) * double(s.seqLen) * double(s.seqLen) * h;
  return matmuls + (causal ? attention / 2 : attention);
}

using namespace bitpipe::bench::gpu;

/// Per-kernel times: an event pair around each call of an iteration (the
/// pairs are reused from one iteration to the next), the elapsed times
/// collected per kernel name once the iteration has finished.
class OpTimes {
public:
  ~OpTimes() {
    for (Pair &p : pairs_) {
      cudaEventDestroy(p.begin);
      cudaEventDestroy(p.end);
    }
  }
  void begin(const char *name, void *stream) {
    if (next_ == pairs_.size()) {
      Pair p;
      cudaCheck(cudaEventCreate(&p.begin), "cudaEventCreate");
      cudaCheck(cudaEventCreate(&p.end), "cudaEventCreate");
      pairs_.push_back(p);
    }
    pairs_[next_].name = name;
    cudaCheck(
        cudaEventRecord(pairs_[next_].begin, static_cast<cudaStream_t>(stream)),
        "cudaEventRecord");
  }
  void end(void *stream) {
    cudaCheck(
        cudaEventRecord(pairs_[next_++].end, static_cast<cudaStream_t>(stream)),
        "cudaEventRecord");
  }
  /// After the iteration's work has finished: collects its times.
  void collect() {
    for (size_t i = 0; i < next_; ++i) {
      float ms = 0;
      cudaCheck(cudaEventElapsedTime(&ms, pairs_[i].begin, pairs_[i].end),
                "cudaEventElapsedTime");
      auto it = std::find_if(times_.begin(), times_.end(), [&](const auto &t) {
        return t.first == pairs_[i].name;
      });
      if (it == times_.end())
        times_.emplace_back(pairs_[i].name, std::vector<double>{ms});
      else
        it->second.push_back(ms);
    }
    next_ = 0;
  }
  /// (name, times in ms) in call order.
  const std::vector<std::pair<std::string, std::vector<double>>> &
  times() const {
    return times_;
  }

private:
  struct Pair {
    std::string name;
    cudaEvent_t begin, end;
  };
  std::vector<Pair> pairs_;
  size_t next_ = 0;
  std::vector<std::pair<std::string, std::vector<double>>> times_;
};

/// One block's weights, activations and gradients, and the kernel calls of
/// its forward and backward (docs/models.md's GPT layer).
class Block {
public:
  Block(const Shape &s, Buffers &b, void *stream)
      : s_(s), n_(s.batch * s.seqLen), stream_(stream) {
    const int64_t H = s.hidden, N = n_;
    // Weights at GPT-2's initial scale (normal(0, 0.02): uniform of the
    // same standard deviation), layer-norm gains near one.
    const float w = 0.035f;
    gamma1_ = b.bf16(H, 1.0f);
    beta1_ = b.bf16(H, 0.1f);
    gamma2_ = b.bf16(H, 1.0f);
    beta2_ = b.bf16(H, 0.1f);
    wQkv_ = b.bf16(3 * H * H, w);
    bQkv_ = b.bf16(3 * H, w);
    wProj_ = b.bf16(H * H, w);
    bProj_ = b.bf16(H, w);
    wFc_ = b.bf16(4 * H * H, w);
    bFc_ = b.bf16(4 * H, w);
    wOut_ = b.bf16(4 * H * H, w);
    bOut_ = b.bf16(H, w);
    // Activations.
    x_ = b.bf16(N * H, 1.0f);
    xn1_ = b.bf16Output(N * H);
    mean1_ = b.f32(N);
    rstd1_ = b.f32(N);
    qkv_ = b.bf16Output(N * 3 * H);
    attn_ = b.bf16Output(N * H);
    lse_ = b.f32(s.batch * s.heads * s.seqLen);
    proj_ = b.bf16Output(N * H);
    h1_ = b.bf16Output(N * H);
    xn2_ = b.bf16Output(N * H);
    mean2_ = b.f32(N);
    rstd2_ = b.f32(N);
    pre_ = b.bf16Output(N * 4 * H);
    gelu_ = b.bf16Output(N * 4 * H);
    mlp_ = b.bf16Output(N * H);
    y_ = b.bf16Output(N * H);
    // Gradients: dy given; activation gradients bf16; parameter gradients
    // fp32 accumulators (cuda.h's convention).
    dy_ = b.bf16(N * H, 1e-2f);
    dPre_ = b.bf16Output(N * 4 * H);
    dXn2_ = b.bf16Output(N * H);
    dH1Ln_ = b.bf16Output(N * H);
    dH1_ = b.bf16Output(N * H);
    dAttn_ = b.bf16Output(N * H);
    dQkv_ = b.bf16Output(N * 3 * H);
    dXn1_ = b.bf16Output(N * H);
    dXLn_ = b.bf16Output(N * H);
    dX_ = b.bf16Output(N * H);
    dGamma1_ = b.f32(H);
    dBeta1_ = b.f32(H);
    dGamma2_ = b.f32(H);
    dBeta2_ = b.f32(H);
    dWQkv_ = b.f32(3 * H * H);
    dBQkv_ = b.f32(3 * H);
    dWProj_ = b.f32(H * H);
    dBProj_ = b.f32(H);
    dWFc_ = b.f32(4 * H * H);
    dBFc_ = b.f32(4 * H);
    dWOut_ = b.f32(4 * H * H);
    dBOut_ = b.f32(H);
  }

  void forward(bool cudnn) {
    const int64_t H = s_.hidden, N = n_, B = s_.batch, T = s_.seqLen,
                  nh = s_.heads;
    void *st = stream_;
    op("bp_cuda_layer_norm_fwd (ln1)", [&] {
      return bp_cuda_layer_norm_fwd(x_, gamma1_, beta1_, xn1_, mean1_, rstd1_,
                                    N, H, 1e-5f, st);
    });
    op("bp_cuda_linear_fwd (qkv)", [&] {
      return bp_cuda_linear_fwd(xn1_, wQkv_, bQkv_, qkv_, N, H, 3 * H, st);
    });
    if (cudnn)
      op("bp_cudnn_attention_fwd", [&] {
        return bp_cudnn_attention_fwd(qkv_, attn_, lse_, B, T, H, nh, 1, st);
      });
    else
      op("bp_cuda_attention_fwd", [&] {
        return bp_cuda_attention_fwd(qkv_, attn_, lse_, B, T, H, nh, 1, st);
      });
    op("bp_cuda_linear_fwd (proj)", [&] {
      return bp_cuda_linear_fwd(attn_, wProj_, bProj_, proj_, N, H, H, st);
    });
    op("bp_cuda_add_fwd (residual 1)",
       [&] { return bp_cuda_add_fwd(x_, proj_, h1_, N * H, st); });
    op("bp_cuda_layer_norm_fwd (ln2)", [&] {
      return bp_cuda_layer_norm_fwd(h1_, gamma2_, beta2_, xn2_, mean2_, rstd2_,
                                    N, H, 1e-5f, st);
    });
    op("bp_cuda_linear_gelu_fwd (fc)", [&] {
      return bp_cuda_linear_gelu_fwd(xn2_, wFc_, bFc_, gelu_, pre_, N, H, 4 * H,
                                     st);
    });
    op("bp_cuda_linear_fwd (mlp proj)", [&] {
      return bp_cuda_linear_fwd(gelu_, wOut_, bOut_, mlp_, N, 4 * H, H, st);
    });
    op("bp_cuda_add_fwd (residual 2)",
       [&] { return bp_cuda_add_fwd(h1_, mlp_, y_, N * H, st); });
  }

  /// dy flows into both residual branches: the MLP's and, unchanged, h1's.
  void backward(bool cudnn) {
    const int64_t H = s_.hidden, N = n_, B = s_.batch, T = s_.seqLen,
                  nh = s_.heads;
    void *st = stream_;
    // MLP: out proj (4H -> H), then fc (H -> 4H) through the GELU.
    op("bp_cuda_linear_bwd_weight (mlp proj)", [&] {
      return bp_cuda_linear_bwd_weight(dy_, gelu_, dWOut_, dBOut_, N, 4 * H, H,
                                       st);
    });
    op("bp_cuda_linear_bwd_input_gelu (mlp proj)", [&] {
      return bp_cuda_linear_bwd_input_gelu(dy_, wOut_, pre_, dPre_, N, 4 * H, H,
                                           st);
    });
    op("bp_cuda_linear_bwd_weight (fc)", [&] {
      return bp_cuda_linear_bwd_weight(dPre_, xn2_, dWFc_, dBFc_, N, H, 4 * H,
                                       st);
    });
    op("bp_cuda_linear_bwd_input (fc)", [&] {
      return bp_cuda_linear_bwd_input(dPre_, wFc_, dXn2_, N, H, 4 * H, st);
    });
    op("bp_cuda_layer_norm_bwd (ln2)", [&] {
      return bp_cuda_layer_norm_bwd(dXn2_, h1_, gamma2_, mean2_, rstd2_, dH1Ln_,
                                    dGamma2_, dBeta2_, N, H, st);
    });
    op("bp_cuda_add_fwd (gradient of h1)",
       [&] { return bp_cuda_add_fwd(dy_, dH1Ln_, dH1_, N * H, st); });
    // Attention: out proj, attention, qkv.
    op("bp_cuda_linear_bwd_weight (proj)", [&] {
      return bp_cuda_linear_bwd_weight(dH1_, attn_, dWProj_, dBProj_, N, H, H,
                                       st);
    });
    op("bp_cuda_linear_bwd_input (proj)", [&] {
      return bp_cuda_linear_bwd_input(dH1_, wProj_, dAttn_, N, H, H, st);
    });
    if (cudnn)
      op("bp_cudnn_attention_bwd", [&] {
        return bp_cudnn_attention_bwd(qkv_, attn_, dAttn_, lse_, dQkv_, B, T, H,
                                      nh, 1, st);
      });
    else
      op("bp_cuda_attention_bwd", [&] {
        return bp_cuda_attention_bwd(qkv_, attn_, dAttn_, lse_, dQkv_, B, T, H,
                                     nh, 1, st);
      });
    op("bp_cuda_linear_bwd_weight (qkv)", [&] {
      return bp_cuda_linear_bwd_weight(dQkv_, xn1_, dWQkv_, dBQkv_, N, H, 3 * H,
                                       st);
    });
    op("bp_cuda_linear_bwd_input (qkv)", [&] {
      return bp_cuda_linear_bwd_input(dQkv_, wQkv_, dXn1_, N, H, 3 * H, st);
    });
    op("bp_cuda_layer_norm_bwd (ln1)", [&] {
      return bp_cuda_layer_norm_bwd(dXn1_, x_, gamma1_, mean1_, rstd1_, dXLn_,
                                    dGamma1_, dBeta1_, N, H, st);
    });
    op("bp_cuda_add_fwd (gradient of x)",
       [&] { return bp_cuda_add_fwd(dH1_, dXLn_, dX_, N * H, st); });
  }

  /// Per-kernel timing of the next calls (nullptr: none).
  void setTimes(OpTimes *times) { times_ = times; }

private:
  template <typename F> void op(const char *name, F &&call);

  Shape s_;
  OpTimes *times_ = nullptr;
  int64_t n_;
  void *stream_;
  bp_bf16_t *gamma1_, *beta1_, *gamma2_, *beta2_, *wQkv_, *bQkv_, *wProj_,
      *bProj_, *wFc_, *bFc_, *wOut_, *bOut_;
  bp_bf16_t *x_, *xn1_, *qkv_, *attn_, *proj_, *h1_, *xn2_, *pre_, *gelu_,
      *mlp_, *y_;
  float *mean1_, *rstd1_, *mean2_, *rstd2_, *lse_;
  bp_bf16_t *dy_, *dPre_, *dXn2_, *dH1Ln_, *dH1_, *dAttn_, *dQkv_, *dXn1_,
      *dXLn_, *dX_;
  float *dGamma1_, *dBeta1_, *dGamma2_, *dBeta2_, *dWQkv_, *dBQkv_, *dWProj_,
      *dBProj_, *dWFc_, *dBFc_, *dWOut_, *dBOut_;
};

template <typename F> void Block::op(const char *name, F &&call) {
  if (times_)
    times_->begin(name, stream_);
  kernel(call(), name);
  if (times_)
    times_->end(stream_);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Times \p iters iterations after \p warmup, and prints the BPBENCH line.
void measure(const Shape &s, bool cudnn, int warmup, int iters, bool breakdown,
             cudaStream_t stream) {
  const char *attnName = cudnn ? "cudnn" : "own";
  std::printf("BPBENCH block H=%lld nh=%lld T=%lld B=%lld attn=%s",
              (long long)s.hidden, (long long)s.heads, (long long)s.seqLen,
              (long long)s.batch, attnName);
  if (cudnn &&
      !bp_cudnn_attention_supported(s.batch, s.seqLen, s.hidden, s.heads, 1)) {
    std::printf(" unsupported\n");
    std::fflush(stdout);
    return;
  }
  std::fflush(stdout);
  Buffers buffers(stream);
  Block block(s, buffers, stream);
  // The inputs were uploaded with cudaMemcpy on the legacy stream, which a
  // non-blocking stream does not wait for (and a pageable upload may still
  // be in flight when cudaMemcpy returns): wait for the whole device once.
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (inputs)");
  cudaEvent_t start, mid, end;
  cudaCheck(cudaEventCreate(&start), "cudaEventCreate");
  cudaCheck(cudaEventCreate(&mid), "cudaEventCreate");
  cudaCheck(cudaEventCreate(&end), "cudaEventCreate");
  std::vector<double> fwd, bwd, total;
  for (int i = 0; i < warmup + iters; ++i) {
    cudaCheck(cudaEventRecord(start, stream), "cudaEventRecord");
    block.forward(cudnn);
    cudaCheck(cudaEventRecord(mid, stream), "cudaEventRecord");
    block.backward(cudnn);
    cudaCheck(cudaEventRecord(end, stream), "cudaEventRecord");
    cudaCheck(cudaEventSynchronize(end), "cudaEventSynchronize (a kernel "
                                         "faulted?)");
    if (i < warmup)
      continue;
    float f = 0, b = 0;
    cudaCheck(cudaEventElapsedTime(&f, start, mid), "cudaEventElapsedTime");
    cudaCheck(cudaEventElapsedTime(&b, mid, end), "cudaEventElapsedTime");
    fwd.push_back(f);
    bwd.push_back(b);
    total.push_back(double(f) + double(b));
  }
  kernel(bp_cuda_synchronize(stream), "bp_cuda_synchronize");
  double ms = median(total);
  std::printf(" fwd_ms=%.4f bwd_ms=%.4f ms=%.4f tflops=%.1f\n", median(fwd),
              median(bwd), ms, blockFlops(s, true) / (ms * 1e-3) / 1e12);
  std::fflush(stdout);
  if (breakdown) {
    // Where the time goes: the same iterations again with an event pair
    // around each kernel (apart from the totals above, which the extra
    // events would perturb slightly).
    OpTimes times;
    block.setTimes(&times);
    for (int i = 0; i < iters; ++i) {
      block.forward(cudnn);
      block.backward(cudnn);
      cudaCheck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      times.collect();
    }
    block.setTimes(nullptr);
    for (const auto &[name, v] : times.times())
      std::printf("BPOP H=%lld nh=%lld T=%lld B=%lld attn=%s ms=%.4f op=%s\n",
                  (long long)s.hidden, (long long)s.heads, (long long)s.seqLen,
                  (long long)s.batch, attnName, median(v), name.c_str());
    std::fflush(stdout);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(mid);
  cudaEventDestroy(end);
}

/// "H,nh,T,B;H,nh,T,B..." -> shapes; false on malformed input.
bool parseShapes(const std::string &text, std::vector<Shape> &out) {
  out.clear();
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(';', begin);
    std::string one = text.substr(
        begin, end == std::string::npos ? std::string::npos : end - begin);
    Shape s;
    long long h, nh, t, b;
    char extra;
    if (std::sscanf(one.c_str(), "%lld,%lld,%lld,%lld%c", &h, &nh, &t, &b,
                    &extra) != 4 ||
        h <= 0 || nh <= 0 || t <= 0 || b <= 0 || h % nh != 0)
      return false;
    s = {h, nh, t, b};
    out.push_back(s);
    if (end == std::string::npos)
      break;
    begin = end + 1;
  }
  return !out.empty();
}

int usage() {
  std::fprintf(stderr,
               "usage: bitpipe-gpu-block-bench [--shapes H,nh,T,B[;...]] "
               "[--warmup K] [--iters K] [--attention own|cudnn|both] "
               "[--breakdown]\n"
               "  (H a multiple of nh; defaults: flops.py's three shapes, "
               "warm-up 3, 10 timed iterations, both attentions)\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  programName() = "bitpipe-gpu-block-bench";
  // The benchmark's shapes (bench/gpu/flops.py's BLOCK_SHAPES).
  std::vector<Shape> shapes = {
      {1024, 16, 1024, 8}, {2048, 16, 2048, 4}, {4096, 32, 2048, 2}};
  int warmup = 3, iters = 10;
  std::string attention = "both";
  bool breakdown = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--breakdown") {
      breakdown = true;
      continue;
    }
    if (i + 1 >= argc)
      return usage();
    std::string value = argv[++i];
    if (flag == "--shapes") {
      if (!parseShapes(value, shapes)) {
        std::fprintf(stderr,
                     "bitpipe-gpu-block-bench: --shapes: expected "
                     "H,nh,T,B[;H,nh,T,B...] with positive integers "
                     "and H a multiple of nh, got '%s'\n",
                     value.c_str());
        return 2;
      }
    } else if (flag == "--warmup" || flag == "--iters") {
      char *end = nullptr;
      long k = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || k < (flag == "--iters" ? 1 : 0) || k > 100000) {
        std::fprintf(stderr,
                     "bitpipe-gpu-block-bench: %s: expected a "
                     "count, got '%s'\n",
                     flag.c_str(), value.c_str());
        return 2;
      }
      (flag == "--warmup" ? warmup : iters) = int(k);
    } else if (flag == "--attention") {
      if (value != "own" && value != "cudnn" && value != "both")
        return usage();
      attention = value;
    } else {
      return usage();
    }
  }

  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "bitpipe-gpu-block-bench: no usable CUDA device\n");
    return 2;
  }
  cudaStream_t stream;
  cudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            "cudaStreamCreate");
  for (const Shape &s : shapes) {
    if (attention != "cudnn")
      measure(s, false, warmup, iters, breakdown, stream);
    if (attention != "own")
      measure(s, true, warmup, iters, breakdown, stream);
  }
  // Blocks freed on this stream stay cached under its handle (cuda.h), so
  // the stream outlives the pool's use: it is not destroyed.
  return 0;
}
