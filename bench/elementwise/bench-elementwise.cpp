//===- bench-elementwise.cpp - The CPU element-wise kernels against libm --===//
//
//   bench-elementwise [--elements N] [--rounds R] [--threads T]
//
// Times the runtime's exact GELU (bp_gelu_erf_fwd / _bwd, on VectorErf.h
// and VectorExp.h) and its tanh GELU forward (bp_gelu_fwd, on VectorExp.h)
// against the same loops written with libm's erff, expf and tanhf, which
// the kernels used before, on the same inputs, alternating in
// one run; prints each pair's times and their ratio (ours / libm's; below
// 1 is faster), and the largest difference of the outputs. Then the
// GELU-fused products of a GPT MLP (gpt-cpu-medium's: 512 rows, 256 ->
// 1024) against the two kernels in sequence: bp_linear_gelu_fwd against
// bp_linear_fwd + bp_gelu_fwd, and bp_linear_bwd_input_gelu against
// bp_linear_bwd_input + bp_gelu_bwd, on T kernel threads (default 1); and
// cross-entropy's backward at GPT-2's vocabulary with the forward's row
// normalisers against computing them again first. Built
// where SLEEF is (Debian's libsleef-dev, optional), it also times both GELU
// forwards against loops on SLEEF's 8-wide AVX2 tanhf and erff (1-ulp
// versions), the vector-math library the kernels could have used instead
// of their own. Checks nothing: bench/RESULTS.md records what it printed.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/runtime.h"
#include "core/Flags.h"
#include "cpu/Parallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

using namespace bitpipe::runtime;

#ifdef BITPIPE_HAVE_SLEEF
// SleefGelu.cpp, compiled for AVX2 and FMA: called only where the CPU has
// them.
void geluTanhFwdSleef(const float *x, float *y, int64_t n);
void geluErfFwdSleef(const float *x, float *y, int64_t n);
#endif

namespace {

constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

// The reference loops: the kernels as they were, one libm call an element.
__attribute__((noinline)) void geluErfFwdLibm(const float *x, float *y,
                                              int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

__attribute__((noinline)) void geluErfBwdLibm(const float *dy, const float *x,
                                              float *dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
    float pdf = kInvSqrt2Pi * std::exp(-0.5f * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

// The tanh GELU as the kernel computed it before VectorExp.h: libm's tanhf.
__attribute__((noinline)) void geluTanhFwdLibm(const float *x, float *y,
                                               int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] =
        0.5f * v *
        (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}

template <typename F> double seconds(F &&f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

double maxDifference(const std::vector<float> &a, const std::vector<float> &b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  int64_t n = 1 << 22, rounds = 20, threads = 1;
  FlagSet flags;
  flags.integer("--elements", "N", "elements per call (default 4M)", &n, 1)
      .integer("--rounds", "R", "alternating rounds (default 20)", &rounds, 1)
      .integer("--threads", "T",
               "kernel threads of the fused products "
               "(default 1)",
               &threads, 1);
  if (Status s = flags.parse(argc, argv); !s.isOk()) {
    std::fprintf(stderr, "bench-elementwise: %s\n%s", s.message().c_str(),
                 flags.help().c_str());
    return 2;
  }
  // Activations of a trained layer's size: mostly within [-4, 4].
  std::vector<float> x(n), dy(n, 1.0f), ours(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = 4.0f * std::sin(0.001f * static_cast<float>(i));
  // Each pair alternates `rounds` times: ours into `ours`, the reference
  // into `ref`; the line gives both mean times, their ratio and the largest
  // difference of the outputs.
  std::vector<float> ref(n);
  const double ms = 1e3 / static_cast<double>(rounds);
  std::printf("bench-elementwise: %lld elements, %lld rounds, alternating\n",
              static_cast<long long>(n), static_cast<long long>(rounds));
  auto pair = [&](const char *what, const char *refName,
                  const std::function<void(float *)> &oursFn,
                  const std::function<void(float *)> &refFn) {
    double tOurs = 0, tRef = 0;
    for (int64_t r = 0; r < rounds; ++r) {
      tOurs += seconds([&] { oursFn(ours.data()); });
      tRef += seconds([&] { refFn(ref.data()); });
    }
    std::printf("%s: ours %.2f ms, %s %.2f ms, ratio %.3f, max difference "
                "%.3g\n",
                what, tOurs * ms, refName, tRef * ms, tOurs / tRef,
                maxDifference(ours, ref));
  };
  const float *xs = x.data(), *dys = dy.data();
  pair(
      "gelu_erf_fwd", "libm", [&](float *y) { bp_gelu_erf_fwd(xs, y, n); },
      [&](float *y) { geluErfFwdLibm(xs, y, n); });
  pair(
      "gelu_erf_bwd", "libm",
      [&](float *dx) { bp_gelu_erf_bwd(dys, xs, dx, n); },
      [&](float *dx) { geluErfBwdLibm(dys, xs, dx, n); });
  pair(
      "gelu_fwd (tanh form)", "libm tanhf",
      [&](float *y) { bp_gelu_fwd(xs, y, n); },
      [&](float *y) { geluTanhFwdLibm(xs, y, n); });
  // The GELU-fused products against the two kernels in sequence: the same
  // results bit for bit (ThreadsTest), so only the time differs.
  {
    const int64_t rows = 512, in = 256, out = 1024;
    cpu::setKernelThreads(static_cast<int>(threads));
    std::vector<float> a(rows * in), w(out * in), b(out), g(rows * out);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = std::sin(0.37f * static_cast<float>(i));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = 0.05f * std::cos(0.11f * static_cast<float>(i));
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = 0.01f * static_cast<float>(i % 7);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = std::sin(0.07f * static_cast<float>(i));
    std::vector<float> pre(rows * out), y(rows * out), dxIn(rows * in),
        preIn(rows * in);
    for (size_t i = 0; i < preIn.size(); ++i)
      preIn[i] = 3.0f * std::sin(0.013f * static_cast<float>(i));
    double tFused = 0, tSeq = 0, tFusedB = 0, tSeqB = 0;
    auto fusedFwd = [&] {
      tFused += seconds([&] {
        bp_linear_gelu_fwd(a.data(), w.data(), b.data(), y.data(), pre.data(),
                           rows, in, out);
      });
    };
    auto seqFwd = [&] {
      tSeq += seconds([&] {
        bp_linear_fwd(a.data(), w.data(), b.data(), pre.data(), rows, in, out);
        bp_gelu_fwd(pre.data(), y.data(), rows * out);
      });
    };
    // The backward through the GELU: dx [rows, in] from g [rows, out].
    auto fusedBwd = [&] {
      tFusedB += seconds([&] {
        bp_linear_bwd_input_gelu(g.data(), w.data(), preIn.data(), dxIn.data(),
                                 rows, in, out);
      });
    };
    auto seqBwd = [&] {
      tSeqB += seconds([&] {
        bp_linear_bwd_input(g.data(), w.data(), dxIn.data(), rows, in, out);
        bp_gelu_bwd(dxIn.data(), preIn.data(), dxIn.data(), rows * in);
      });
    };
    // Which of a pair runs first alternates by round: the first one after
    // the other pair's work finds a colder cache (measured: 1.2x slower).
    for (int64_t r = 0; r < rounds; ++r) {
      if (r % 2) {
        fusedFwd(), seqFwd(), fusedBwd(), seqBwd();
      } else {
        seqFwd(), fusedFwd(), seqBwd(), fusedBwd();
      }
    }
    std::printf("linear_gelu_fwd (%lld x %lld -> %lld, %lld thread(s)): "
                "fused %.2f ms, in sequence %.2f ms, ratio %.3f\n",
                static_cast<long long>(rows), static_cast<long long>(in),
                static_cast<long long>(out), static_cast<long long>(threads),
                tFused * ms, tSeq * ms, tFused / tSeq);
    std::printf("linear_bwd_input_gelu: fused %.2f ms, in sequence %.2f ms, "
                "ratio %.3f\n",
                tFusedB * ms, tSeqB * ms, tFusedB / tSeqB);
    cpu::setKernelThreads(1);
  }
  {
    // Cross-entropy's backward at GPT-2's vocabulary (512 rows, as a
    // micro-batch of 4 x 128 tokens): reading the forward's row
    // normalisers against computing them again first (the forward kernel
    // into scratch, as a program without the statistics runs it).
    const int64_t rows = 512, vocab = 50257;
    std::vector<float> logits(rows * vocab), dlogits(rows * vocab);
    for (int64_t i = 0; i < rows * vocab; ++i)
      logits[i] = 3.0f * std::sin(0.37f * static_cast<float>(i % 9973));
    std::vector<int32_t> labels(rows);
    for (int64_t i = 0; i < rows; ++i)
      labels[i] = static_cast<int32_t>((i * 7919) % vocab);
    std::vector<float> rowMax(rows), logSum(rows), scratchMax(rows),
        scratchSum(rows);
    float loss = 0, scratchLoss = 0;
    const float dloss = 1.0f;
    cpu::setKernelThreads(static_cast<int>(threads));
    bp_cross_entropy_fwd(logits.data(), labels.data(), &loss, rowMax.data(),
                         logSum.data(), rows, vocab, BP_IGNORE_INDEX);
    double tSaved = 0, tAgain = 0;
    auto saved = [&] {
      tSaved += seconds([&] {
        bp_cross_entropy_bwd(logits.data(), labels.data(), &dloss,
                             rowMax.data(), logSum.data(), dlogits.data(), rows,
                             vocab, BP_IGNORE_INDEX);
      });
    };
    auto again = [&] {
      tAgain += seconds([&] {
        bp_cross_entropy_fwd(logits.data(), labels.data(), &scratchLoss,
                             scratchMax.data(), scratchSum.data(), rows, vocab,
                             BP_IGNORE_INDEX);
        bp_cross_entropy_bwd(logits.data(), labels.data(), &dloss,
                             scratchMax.data(), scratchSum.data(),
                             dlogits.data(), rows, vocab, BP_IGNORE_INDEX);
      });
    };
    for (int64_t r = 0; r < rounds; ++r) {
      if (r % 2)
        saved(), again();
      else
        again(), saved();
    }
    std::printf("cross_entropy_bwd (%lld x %lld, %lld thread(s)): with the "
                "forward's normalisers %.2f ms, computing them again %.2f "
                "ms, ratio %.3f\n",
                static_cast<long long>(rows), static_cast<long long>(vocab),
                static_cast<long long>(threads), tSaved * ms, tAgain * ms,
                tSaved / tAgain);
    cpu::setKernelThreads(1);
  }
#ifdef BITPIPE_HAVE_SLEEF
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("SLEEF: this CPU has no AVX2 and FMA; not timed\n");
    return 0;
  }
  pair(
      "gelu_fwd (tanh form)", "SLEEF tanhf8_u10avx2",
      [&](float *y) { bp_gelu_fwd(xs, y, n); },
      [&](float *y) { geluTanhFwdSleef(xs, y, n); });
  pair(
      "gelu_erf_fwd", "SLEEF erff8_u10avx2",
      [&](float *y) { bp_gelu_erf_fwd(xs, y, n); },
      [&](float *y) { geluErfFwdSleef(xs, y, n); });
#endif
  return 0;
}
