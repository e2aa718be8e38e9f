//===- CpuKernels.cpp - bench-kernel-rates on the CPU target --------------===//
//
// What bench-kernel-rates times on the CPU (RateTarget.h): exactly the
// runtime functions a compiled CPU stage calls.
//  - linear: bp_linear_fwd, bp_linear_bwd_input and
//    bp_linear_bwd_weight_g64 (the form with float64 accumulators, which
//    the CPU target's stage functions call), all without bias;
//  - attention: bp_attention_fwd and bp_attention_bwd, the backward on the
//    forward's outputs;
//  - other: layer_norm forward and backward (_g64), gelu forward and
//    backward (the tanh form) and the residual add.
// Operands are random from a fixed seed, 64-byte aligned like the
// runtime's pool's blocks; each kernel is timed call by call with the
// host's clock, the rate the FLOPs over the median call. The kernel
// threads are set as a training executable sets them
// (cpu::setKernelThreads, which keeps OpenBLAS on the calling thread and
// splits the products itself).
//
//===----------------------------------------------------------------------===//

#include "RateTarget.h"

#include "bitpipe/base/CheckedArithmetic.h"
#include "bitpipe/runtime.h"
#include "core/Random.h"
#include "cpu/Parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <optional>

using namespace bitpipe::runtime;

namespace bitpipe::bench {

const TargetInfo kTarget = {"bench-kernel-rates",
                            "the CPU kernels of runtime.h", /*threads=*/true,
                            /*maxJobs=*/1024};

namespace {

/// The fewest timed calls a rate is the median of, however long each takes.
constexpr size_t kMinSamples = 3;

/// The seed of every operand; each buffer of a shape draws its own stream.
constexpr uint64_t kSeed = 0x5eed;

/// A tensor's elements, 64-byte aligned as bp_alloc's blocks are. Not from
/// bp_alloc itself: its pool keeps every freed size, and a grid has many.
template <typename T> class Buffer {
public:
  /// Zeros.
  static Buffer zeros(std::initializer_list<int64_t> shape) {
    Buffer b(shape);
    std::memset(b.data_, 0, b.bytes_);
    return b;
  }
  /// Uniform in [-1, 1), the fixed seed's \p stream.
  static Buffer random(std::initializer_list<int64_t> shape, uint64_t stream) {
    Buffer b(shape);
    for (int64_t i = 0; i < b.count_; ++i)
      b.data_[i] = static_cast<T>(
          2 * randomUniform(kSeed, stream, static_cast<uint64_t>(i)) - 1);
    return b;
  }

  Buffer(Buffer &&other) noexcept
      : data_(other.data_), count_(other.count_), bytes_(other.bytes_) {
    other.data_ = nullptr;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer &operator=(Buffer &&) = delete;
  ~Buffer() { std::free(data_); }

  T *get() const { return data_; }

private:
  explicit Buffer(std::initializer_list<int64_t> shape) {
    constexpr size_t kAlignment = 64;
    std::optional<int64_t> count = bitpipe::checkedProduct(shape);
    std::optional<int64_t> bytes =
        count
            ? bitpipe::checkedProduct({*count, static_cast<int64_t>(sizeof(T))})
            : std::nullopt;
    if (!bytes || *bytes > INT64_MAX - static_cast<int64_t>(kAlignment))
      fail("an operand of more than 2^63 bytes: the shapes are too large");
    count_ = *count;
    // aligned_alloc wants a multiple of the alignment.
    bytes_ = (static_cast<size_t>(*bytes) + kAlignment - 1) / kAlignment *
             kAlignment;
    data_ = static_cast<T *>(std::aligned_alloc(kAlignment, bytes_));
    if (!data_)
      fail("cannot allocate an operand of %zu bytes", bytes_);
  }

  T *data_ = nullptr;
  int64_t count_ = 0;
  size_t bytes_ = 0;
};

using Clock = std::chrono::steady_clock;

/// The median time of \p call: one untimed call, then calls back to back
/// until \p minTime seconds have passed and kMinSamples were timed. The
/// median, because a core shared with other processes now and then loses a
/// call to them.
double hostMedianSeconds(const std::function<void()> &call, double minTime) {
  call();
  std::vector<double> samples;
  const Clock::time_point start = Clock::now();
  Clock::time_point before = start;
  while (samples.size() < kMinSamples ||
         std::chrono::duration<double>(before - start).count() < minTime) {
    call();
    const Clock::time_point after = Clock::now();
    samples.push_back(std::chrono::duration<double>(after - before).count());
    before = after;
  }
  auto middle = samples.begin() + samples.size() / 2;
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

/// A linear layer's three products on operands of one shape.
class LinearLayer final : public KernelsAt {
public:
  explicit LinearLayer(LinearShape s)
      : s_(s), x_(Buffer<float>::random({s.tokens, s.in}, 1)),
        w_(Buffer<float>::random({s.out, s.in}, 2)),
        dy_(Buffer<float>::random({s.tokens, s.out}, 3)),
        y_(Buffer<float>::zeros({s.tokens, s.out})),
        dx_(Buffer<float>::zeros({s.tokens, s.in})),
        dw_(Buffer<double>::zeros({s.out, s.in})) {}

  /// forward, input_grad, weight_grad.
  std::vector<Timed> kernels() const override {
    const double flops = linearFlops(s_);
    return {
        {flops,
         [this] {
           bp_check(bp_linear_fwd(x_.get(), w_.get(), nullptr, y_.get(),
                                  s_.tokens, s_.in, s_.out),
                    "linear_fwd");
         }},
        {flops,
         [this] {
           bp_check(bp_linear_bwd_input(dy_.get(), w_.get(), dx_.get(),
                                        s_.tokens, s_.in, s_.out),
                    "linear_bwd_input");
         }},
        // Accumulates into dw call after call, as micro-batches do.
        {flops,
         [this] {
           bp_check(bp_linear_bwd_weight_g64(dy_.get(), x_.get(), dw_.get(),
                                             nullptr, s_.tokens, s_.in, s_.out),
                    "linear_bwd_weight_g64");
         }},
    };
  }

private:
  LinearShape s_;
  Buffer<float> x_, w_, dy_, y_, dx_;
  Buffer<double> dw_;
};

/// Attention's forward and backward on B sequences of nh heads.
class AttentionLayer final : public KernelsAt {
public:
  AttentionLayer(AttentionShape s, int64_t batch, int64_t heads)
      : s_(s), B_(batch), nh_(heads), H_(heads * s.headDim),
        qkv_(Buffer<float>::random({B_, s.seqLen, 3 * H_}, 1)),
        dout_(Buffer<float>::random({B_, s.seqLen, H_}, 2)),
        out_(Buffer<float>::zeros({B_, s.seqLen, H_})),
        lse_(Buffer<float>::zeros({B_, nh_, s.seqLen})),
        dqkv_(Buffer<float>::zeros({B_, s.seqLen, 3 * H_})) {
    // The backward reads the forward's out and lse.
    forward();
  }

  /// forward, backward.
  std::vector<Timed> kernels() const override {
    const double forwardFlops = attentionForwardFlops(s_, B_, nh_);
    return {{forwardFlops, [this] { forward(); }},
            {2 * forwardFlops, [this] { backward(); }}};
  }

private:
  void forward() const {
    bp_check(bp_attention_fwd(qkv_.get(), out_.get(), lse_.get(), B_, s_.seqLen,
                              H_, nh_, s_.causal),
             "attention_fwd");
  }
  void backward() const {
    bp_check(bp_attention_bwd(qkv_.get(), out_.get(), dout_.get(), lse_.get(),
                              dqkv_.get(), B_, s_.seqLen, H_, nh_, s_.causal),
             "attention_bwd");
  }

  AttentionShape s_;
  int64_t B_, nh_, H_;
  Buffer<float> qkv_, dout_, out_, lse_, dqkv_;
};

/// The kernels that are neither a product nor attention, in the order of
/// a transformer block's pieces: layer norm, GELU and the residual add,
/// each forward and backward (the add's backward is no kernel).
class OtherKernels final : public KernelsAt {
public:
  OtherKernels(int64_t tokens, int64_t dim)
      : N_(tokens), H_(dim), x_(Buffer<float>::random({N_, H_}, 1)),
        dy_(Buffer<float>::random({N_, H_}, 2)),
        gamma_(Buffer<float>::random({H_}, 3)),
        beta_(Buffer<float>::random({H_}, 4)),
        y_(Buffer<float>::zeros({N_, H_})), g_(Buffer<float>::zeros({N_, H_})),
        dx_(Buffer<float>::zeros({N_, H_})),
        dg_(Buffer<float>::zeros({N_, H_})),
        sum_(Buffer<float>::zeros({N_, H_})), mean_(Buffer<float>::zeros({N_})),
        rstd_(Buffer<float>::zeros({N_})), dgamma_(Buffer<double>::zeros({H_})),
        dbeta_(Buffer<double>::zeros({H_})) {}

  /// All of them as one call.
  std::vector<Timed> kernels() const override {
    return {
        {kOtherFlopsPerElement * static_cast<double>(N_) * H_, [this] {
           const int64_t n = N_ * H_;
           bp_check(bp_layer_norm_fwd(x_.get(), gamma_.get(), beta_.get(),
                                      y_.get(), mean_.get(), rstd_.get(), N_,
                                      H_, 1e-5f),
                    "layer_norm_fwd");
           bp_check(bp_layer_norm_bwd_g64(dy_.get(), x_.get(), gamma_.get(),
                                          mean_.get(), rstd_.get(), dx_.get(),
                                          dgamma_.get(), dbeta_.get(), N_, H_),
                    "layer_norm_bwd_g64");
           bp_check(bp_gelu_fwd(y_.get(), g_.get(), n), "gelu_fwd");
           bp_check(bp_gelu_bwd(dy_.get(), y_.get(), dg_.get(), n), "gelu_bwd");
           bp_check(bp_add_fwd(x_.get(), g_.get(), sum_.get(), n), "add_fwd");
         }}};
  }

private:
  int64_t N_, H_;
  Buffer<float> x_, dy_, gamma_, beta_, y_, g_, dx_, dg_, sum_, mean_, rstd_;
  Buffer<double> dgamma_, dbeta_;
};

class CpuTarget final : public RateTarget {
public:
  explicit CpuTarget(int64_t threads) {
    cpu::setKernelThreads(static_cast<int>(threads));
  }
  std::unique_ptr<KernelsAt> linear(const LinearShape &s) override {
    return std::make_unique<LinearLayer>(s);
  }
  std::unique_ptr<KernelsAt> attention(const AttentionShape &s, int64_t batch,
                                       int64_t heads) override {
    return std::make_unique<AttentionLayer>(s, batch, heads);
  }
  std::unique_ptr<KernelsAt> other(int64_t tokens, int64_t dim) override {
    return std::make_unique<OtherKernels>(tokens, dim);
  }
  double medianSeconds(const std::function<void()> &call,
                       double minTime) override {
    return hostMedianSeconds(call, minTime);
  }
};

} // namespace

std::unique_ptr<RateTarget> makeRateTarget(int64_t threads) {
  return std::make_unique<CpuTarget>(threads);
}

/// /proc/cpuinfo's first "model name".
std::string machineDescription() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0)
      if (size_t colon = line.find(':'); colon != std::string::npos) {
        size_t begin = line.find_first_not_of(" \t", colon + 1);
        if (begin != std::string::npos)
          return line.substr(begin);
      }
  return "an unknown CPU";
}

} // namespace bitpipe::bench
