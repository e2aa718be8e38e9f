//===- Reference.h - Plain reference forwards of the nn ops -----*- C++ -*-===//
//
// Test-only. The obvious textbook loops, templated on the scalar type and
// instantiated in double: the kernels' forwards are compared with them, and
// the CPU kernels' backwards with their central finite differences. The
// backward references at the end (checked against those finite differences
// themselves) serve the CUDA kernels' tests, whose sizes are too large for
// finite differences. Nothing here is blocked or clever, so that it is easy
// to believe.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_REFERENCE_H
#define BITPIPE_RUNTIME_UNITTESTS_REFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace bitpipe::runtime::ref {

/// out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]; an empty wpe is no
/// position embedding (rotary models).
template <typename S>
std::vector<S> embedding(const std::vector<int32_t> &tokens,
                         const std::vector<S> &wte, const std::vector<S> &wpe,
                         int64_t B, int64_t T, int64_t H) {
  std::vector<S> out(B * T * H);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < H; ++c)
        out[(b * T + t) * H + c] = wte[tokens[b * T + t] * H + c] +
                                   (wpe.empty() ? S(0) : wpe[t * H + c]);
  return out;
}

/// The mean of row \p i of x [N, H] and 1 / sqrt(biased variance + eps).
template <typename S>
std::pair<S, S> rowMoments(const std::vector<S> &x, int64_t i, int64_t H,
                           S eps) {
  S mu = 0;
  for (int64_t c = 0; c < H; ++c)
    mu += x[i * H + c];
  mu /= S(H);
  S var = 0;
  for (int64_t c = 0; c < H; ++c)
    var += (x[i * H + c] - mu) * (x[i * H + c] - mu);
  var /= S(H);
  return {mu, S(1) / std::sqrt(var + eps)};
}

/// Row-wise layer norm; also returns the mean and 1/std of each row.
template <typename S>
std::vector<S> layerNorm(const std::vector<S> &x, const std::vector<S> &gamma,
                         const std::vector<S> &beta, int64_t N, int64_t H,
                         S eps, std::vector<S> *mean = nullptr,
                         std::vector<S> *rstd = nullptr) {
  std::vector<S> y(N * H);
  if (mean)
    mean->assign(N, S(0));
  if (rstd)
    rstd->assign(N, S(0));
  for (int64_t i = 0; i < N; ++i) {
    auto [mu, rs] = rowMoments(x, i, H, eps);
    for (int64_t c = 0; c < H; ++c)
      y[i * H + c] = (x[i * H + c] - mu) * rs * gamma[c] + beta[c];
    if (mean)
      (*mean)[i] = mu;
    if (rstd)
      (*rstd)[i] = rs;
  }
  return y;
}

/// y = x W^T + b, W [Out, In]; b may be empty (no bias).
template <typename S>
std::vector<S> linear(const std::vector<S> &x, const std::vector<S> &w,
                      const std::vector<S> &b, int64_t N, int64_t In,
                      int64_t Out) {
  std::vector<S> y(N * Out);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t o = 0; o < Out; ++o) {
      S acc = b.empty() ? S(0) : b[o];
      for (int64_t k = 0; k < In; ++k)
        acc += x[i * In + k] * w[o * In + k];
      y[i * Out + o] = acc;
    }
  return y;
}

/// What dropout multiplies probability e of the [B, nh, T, T] scores by (0
/// or 1 / (1 - p)); empty: no dropout (DropoutReference.h makes one).
using ProbabilityFactor = std::function<double(int64_t)>;

/// Grouped-query attention on fused qkv [B, T, (nh + 2 nkv) d], d = H / nh:
/// query head h reads key/value head h / (nh / nkv). Materialises each full
/// score row. Optionally returns the row log-sum-exps (of the undropped
/// scores) as [B, nh, T]; \p drop multiplies each probability before it
/// weighs the values.
template <typename S>
std::vector<S> groupedAttention(const std::vector<S> &qkv, int64_t B, int64_t T,
                                int64_t H, int64_t nh, int64_t nkv, bool causal,
                                std::vector<S> *lse = nullptr,
                                const ProbabilityFactor &drop = {}) {
  const int64_t d = H / nh, width = (nh + 2 * nkv) * d, group = nh / nkv;
  const S scale = S(1) / std::sqrt(S(d));
  std::vector<S> out(B * T * H, S(0));
  if (lse)
    lse->assign(B * nh * T, S(0));
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t c) {
    int64_t column = part == 0 ? h * d : H + (part - 1) * nkv * d + (h / group) * d;
    return qkv[(b * T + t) * width + column + c];
  };
  std::vector<S> p(T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t nKeys = causal ? i + 1 : T;
        S mx = -INFINITY;
        for (int64_t j = 0; j < nKeys; ++j) {
          S s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += at(b, i, 0, h, c) * at(b, j, 1, h, c);
          p[j] = s * scale;
          mx = p[j] > mx ? p[j] : mx;
        }
        S sum = 0;
        for (int64_t j = 0; j < nKeys; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        const int64_t row = ((b * nh + h) * T + i) * T;
        for (int64_t j = 0; j < nKeys; ++j) {
          const S weight = drop ? p[j] / sum * S(drop(row + j)) : p[j] / sum;
          for (int64_t c = 0; c < d; ++c)
            out[(b * T + i) * H + h * d + c] += weight * at(b, j, 2, h, c);
        }
        if (lse)
          (*lse)[(b * nh + h) * T + i] = mx + std::log(sum);
      }
  return out;
}

/// Multi-head attention on fused qkv [B, T, 3H]: groupedAttention with one
/// key/value head per query head.
template <typename S>
std::vector<S> attention(const std::vector<S> &qkv, int64_t B, int64_t T,
                         int64_t H, int64_t nh, bool causal,
                         std::vector<S> *lse = nullptr) {
  return groupedAttention(qkv, B, T, H, nh, nh, causal, lse);
}

/// Rotary position embedding of the q and k heads of qkv [B, T, (nh + 2 nkv)
/// d] (Hugging Face's rotate_half): feature i < d/2 of a head at position t
/// pairs with i + d/2 and is rotated by t * base^(-2i/d); v is copied.
/// sign = -1 rotates back (rotaryGrad).
template <typename S>
std::vector<S> rotary(const std::vector<S> &qkv, int64_t B, int64_t T,
                      int64_t H, int64_t nh, int64_t nkv, double base,
                      double sign = 1.0) {
  const int64_t d = H / nh, half = d / 2, width = (nh + 2 * nkv) * d;
  std::vector<S> out(qkv);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < nh + nkv; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const double angle = double(t) * std::pow(base, -2.0 * i / d);
          const S c = S(std::cos(angle)), sn = S(sign * std::sin(angle));
          const int64_t lo = (b * T + t) * width + h * d + i, hi = lo + half;
          out[lo] = qkv[lo] * c - qkv[hi] * sn;
          out[hi] = qkv[hi] * c + qkv[lo] * sn;
        }
  return out;
}

/// The backward of attention(): for each row i, with P the
/// softmax row, dP_ij = dO_i . V_j, D_i = dO_i . out_i and
/// dS_ij = P_ij (dP_ij - D_i): dQ_i = scale sum_j dS_ij K_j,
/// dK_j += scale dS_ij Q_i, dV_j += P_ij dO_i. D is formed from the \p out
/// the backward is given, as the kernels form it (for the exact out it is
/// sum_j P_ij dP_ij): under bf16 that out is rounded, and D's rounding
/// error is amplified where dP_ij - D_i cancels, which is a property of
/// the inputs, not of the kernel under test.
///
/// groupedAttentionGrad is the backward of groupedAttention: a key/value
/// head's gradient sums the terms of every query head that reads it. With
/// \p drop (factor f_ij on P_ij): dV_j += f_ij P_ij dO_i and dP_ij =
/// f_ij dO_i . V_j, while D_i = dO_i . out_i is unchanged (out already
/// holds the dropped weights).
template <typename S>
std::vector<S>
groupedAttentionGrad(const std::vector<S> &qkv, const std::vector<S> &out,
                     const std::vector<S> &dout, int64_t B, int64_t T,
                     int64_t H, int64_t nh, int64_t nkv, bool causal,
                     const ProbabilityFactor &drop = {}) {
  const int64_t d = H / nh, width = (nh + 2 * nkv) * d, group = nh / nkv;
  const S scale = S(1) / std::sqrt(S(d));
  std::vector<S> dqkv(qkv.size(), S(0)), p(T), dp(T);
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h) {
    int64_t column =
        part == 0 ? h * d : H + (part - 1) * nkv * d + (h / group) * d;
    return (b * T + t) * width + column;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t nKeys = causal ? i + 1 : T;
        const S *q = &qkv[at(b, i, 0, h)];
        const S *dO = &dout[(b * T + i) * H + h * d];
        S mx = -INFINITY;
        for (int64_t j = 0; j < nKeys; ++j) {
          const S *k = &qkv[at(b, j, 1, h)];
          S s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += q[c] * k[c];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        S sum = 0, rowDot = 0;
        for (int64_t j = 0; j < nKeys; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        for (int64_t j = 0; j < nKeys; ++j) {
          p[j] /= sum;
          const S *v = &qkv[at(b, j, 2, h)];
          dp[j] = 0;
          for (int64_t c = 0; c < d; ++c)
            dp[j] += dO[c] * v[c];
        }
        for (int64_t c = 0; c < d; ++c)
          rowDot += dO[c] * out[(b * T + i) * H + h * d + c];
        const int64_t row = ((b * nh + h) * T + i) * T;
        for (int64_t j = 0; j < nKeys; ++j) {
          const S f = drop ? S(drop(row + j)) : S(1);
          const S ds = p[j] * (f * dp[j] - rowDot);
          const S *k = &qkv[at(b, j, 1, h)];
          S *dq = &dqkv[at(b, i, 0, h)];
          S *dk = &dqkv[at(b, j, 1, h)];
          S *dv = &dqkv[at(b, j, 2, h)];
          for (int64_t c = 0; c < d; ++c) {
            dq[c] += scale * ds * k[c];
            dk[c] += scale * ds * q[c];
            dv[c] += f * p[j] * dO[c];
          }
        }
      }
  return dqkv;
}

template <typename S>
std::vector<S> attentionGrad(const std::vector<S> &qkv,
                             const std::vector<S> &out,
                             const std::vector<S> &dout, int64_t B, int64_t T,
                             int64_t H, int64_t nh, bool causal) {
  return groupedAttentionGrad(qkv, out, dout, B, T, H, nh, nh, causal);
}


/// RMS norm over rows of x [N, H]: x / sqrt(mean(x^2) + eps) * gamma; also
/// returns each row's 1 / sqrt(mean(x^2) + eps).
template <typename S>
std::vector<S> rmsNorm(const std::vector<S> &x, const std::vector<S> &gamma,
                       int64_t N, int64_t H, S eps,
                       std::vector<S> *rstd = nullptr) {
  std::vector<S> y(N * H);
  if (rstd)
    rstd->assign(N, S(0));
  for (int64_t i = 0; i < N; ++i) {
    S sq = 0;
    for (int64_t c = 0; c < H; ++c)
      sq += x[i * H + c] * x[i * H + c];
    const S rs = S(1) / std::sqrt(sq / S(H) + eps);
    for (int64_t c = 0; c < H; ++c)
      y[i * H + c] = x[i * H + c] * rs * gamma[c];
    if (rstd)
      (*rstd)[i] = rs;
  }
  return y;
}

/// SwiGLU: gate / (1 + exp(-gate)) * up, element-wise.
template <typename S>
std::vector<S> swiglu(const std::vector<S> &gate, const std::vector<S> &up) {
  std::vector<S> y(gate.size());
  for (size_t i = 0; i < gate.size(); ++i)
    y[i] = gate[i] / (S(1) + std::exp(-gate[i])) * up[i];
  return y;
}

/// GELU, tanh form.
template <typename S> std::vector<S> gelu(const std::vector<S> &x) {
  const S k = std::sqrt(S(2) / S(M_PI));
  std::vector<S> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = S(0.5) * x[i] *
           (S(1) + std::tanh(k * (x[i] + S(0.044715) * x[i] * x[i] * x[i])));
  return y;
}

/// GELU, exact form: x Phi(x).
template <typename S> std::vector<S> geluErf(const std::vector<S> &x) {
  std::vector<S> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = S(0.5) * x[i] * (S(1) + std::erf(x[i] / std::sqrt(S(2))));
  return y;
}

template <typename S>
std::vector<S> add(const std::vector<S> &a, const std::vector<S> &b) {
  std::vector<S> y(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    y[i] = a[i] + b[i];
  return y;
}

/// Mean cross-entropy over rows whose label is not ignoreIndex; 0 if none.
template <typename S>
S crossEntropy(const std::vector<S> &logits, const std::vector<int32_t> &labels,
               int64_t N, int64_t V, int32_t ignoreIndex) {
  S total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (labels[i] == ignoreIndex)
      continue;
    S mx = logits[i * V];
    for (int64_t j = 1; j < V; ++j)
      mx = logits[i * V + j] > mx ? logits[i * V + j] : mx;
    S sum = 0;
    for (int64_t j = 0; j < V; ++j)
      sum += std::exp(logits[i * V + j] - mx);
    total += mx + std::log(sum) - logits[i * V + labels[i]];
    ++count;
  }
  return count ? total / S(count) : S(0);
}

//===----------------------------------------------------------------------===//
// Backward references: the gradients of the forwards above, written out by
// the chain rule (GradCheckTest checks each against finite differences of
// its forward). Finite differences are too slow for the sizes the CUDA
// kernels are tested at (H = 8192, V = 50304); these are not.
//===----------------------------------------------------------------------===//

/// Scatter-add of dout [B, T, H]: dwte [V, H] and dwpe [T, H], from zero.
template <typename S>
void embeddingGrad(const std::vector<int32_t> &tokens, const std::vector<S> &dout,
                   int64_t B, int64_t T, int64_t H, int64_t V,
                   std::vector<S> &dwte, std::vector<S> &dwpe) {
  dwte.assign(V * H, S(0));
  dwpe.assign(T * H, S(0));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < H; ++c) {
        dwte[tokens[b * T + t] * H + c] += dout[(b * T + t) * H + c];
        dwpe[t * H + c] += dout[(b * T + t) * H + c];
      }
}

/// dx [N, H], dgamma [H], dbeta [H] of sum(dy * layerNorm(x)), through the
/// mean and the variance one at a time (the textbook derivation, not the
/// kernels' compact rstd (g - mean(g) - xhat mean(g xhat)), so that the two
/// check each other).
template <typename S>
void layerNormGrad(const std::vector<S> &dy, const std::vector<S> &x,
                   const std::vector<S> &gamma, int64_t N, int64_t H, S eps,
                   std::vector<S> &dx, std::vector<S> &dgamma,
                   std::vector<S> &dbeta) {
  dx.assign(N * H, S(0));
  dgamma.assign(H, S(0));
  dbeta.assign(H, S(0));
  for (int64_t i = 0; i < N; ++i) {
    const auto [mu, rs] = rowMoments(x, i, H, eps);
    // dL/dvar and dL/dmu, with dxhat = dy * gamma.
    S dvar = 0, dmu = 0, sumCentred = 0;
    for (int64_t c = 0; c < H; ++c) {
      const S dxhat = dy[i * H + c] * gamma[c];
      dvar += dxhat * (x[i * H + c] - mu) * S(-0.5) * rs * rs * rs;
      dmu += -dxhat * rs;
      sumCentred += x[i * H + c] - mu;
    }
    dmu += dvar * S(-2) * sumCentred / S(H);
    for (int64_t c = 0; c < H; ++c) {
      const S dxhat = dy[i * H + c] * gamma[c];
      dx[i * H + c] = dxhat * rs + dvar * S(2) * (x[i * H + c] - mu) / S(H) +
                      dmu / S(H);
      dgamma[c] += dy[i * H + c] * (x[i * H + c] - mu) * rs;
      dbeta[c] += dy[i * H + c];
    }
  }
}

/// dx = dy * gelu'(x), exact form: Phi(x) + x phi(x).
template <typename S>
std::vector<S> geluErfGrad(const std::vector<S> &dy, const std::vector<S> &x) {
  std::vector<S> dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const S cdf = S(0.5) * (S(1) + std::erf(x[i] / std::sqrt(S(2))));
    const S pdf = std::exp(-x[i] * x[i] / S(2)) / std::sqrt(S(2) * S(M_PI));
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
  return dx;
}

/// dx = dy * gelu'(x), tanh form.
template <typename S>
std::vector<S> geluGrad(const std::vector<S> &dy, const std::vector<S> &x) {
  const S k = std::sqrt(S(2) / S(M_PI));
  std::vector<S> dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const S u = k * (x[i] + S(0.044715) * x[i] * x[i] * x[i]);
    const S du = k * (S(1) + S(3) * S(0.044715) * x[i] * x[i]);
    const S th = std::tanh(u);
    dx[i] = dy[i] * (S(0.5) * (S(1) + th) +
                     S(0.5) * x[i] * (S(1) - th * th) * du);
  }
  return dx;
}

/// dlogits [N, V] of dloss * crossEntropy(logits): dloss (softmax - onehot)
/// / count on labelled rows, 0 on ignored ones (and everywhere if none is
/// labelled).
template <typename S>
std::vector<S> crossEntropyGrad(const std::vector<S> &logits,
                                const std::vector<int32_t> &labels, int64_t N,
                                int64_t V, int32_t ignoreIndex, S dloss) {
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i)
    count += labels[i] != ignoreIndex;
  std::vector<S> d(N * V, S(0));
  for (int64_t i = 0; i < N; ++i) {
    if (labels[i] == ignoreIndex)
      continue;
    S mx = logits[i * V];
    for (int64_t j = 1; j < V; ++j)
      mx = logits[i * V + j] > mx ? logits[i * V + j] : mx;
    S sum = 0;
    for (int64_t j = 0; j < V; ++j)
      sum += std::exp(logits[i * V + j] - mx);
    for (int64_t j = 0; j < V; ++j)
      d[i * V + j] = dloss *
                     (std::exp(logits[i * V + j] - mx) / sum -
                      (j == labels[i] ? S(1) : S(0))) /
                     S(count);
  }
  return d;
}

/// The gradient of rotary(): dout rotated back (a rotation's transpose is
/// its inverse).
template <typename S>
std::vector<S> rotaryGrad(const std::vector<S> &dout, int64_t B, int64_t T,
                          int64_t H, int64_t nh, int64_t nkv, double base) {
  return rotary(dout, B, T, H, nh, nkv, base, -1.0);
}

/// dx [N, H] and dgamma [H] of sum(dy * rmsNorm(x)), through the mean square
/// m = mean(x^2) (y = x (m + eps)^(-1/2) gamma), not through the kernels'
/// compact rstd (g - xhat mean(g xhat)).
template <typename S>
void rmsNormGrad(const std::vector<S> &dy, const std::vector<S> &x,
                 const std::vector<S> &gamma, int64_t N, int64_t H, S eps,
                 std::vector<S> &dx, std::vector<S> &dgamma) {
  dx.assign(N * H, S(0));
  dgamma.assign(H, S(0));
  for (int64_t i = 0; i < N; ++i) {
    S m = 0;
    for (int64_t c = 0; c < H; ++c)
      m += x[i * H + c] * x[i * H + c] / S(H);
    const S rs = S(1) / std::sqrt(m + eps);
    // dL/dm = sum_c dy_c gamma_c x_c * (-1/2) (m + eps)^(-3/2).
    S dm = 0;
    for (int64_t c = 0; c < H; ++c)
      dm += dy[i * H + c] * gamma[c] * x[i * H + c] * S(-0.5) * rs * rs * rs;
    for (int64_t c = 0; c < H; ++c) {
      dx[i * H + c] =
          dy[i * H + c] * gamma[c] * rs + dm * S(2) * x[i * H + c] / S(H);
      dgamma[c] += dy[i * H + c] * x[i * H + c] * rs;
    }
  }
}

/// dgate and dup of sum(dy * swiglu(gate, up)).
template <typename S>
void swigluGrad(const std::vector<S> &dy, const std::vector<S> &gate,
                const std::vector<S> &up, std::vector<S> &dgate,
                std::vector<S> &dup) {
  dgate.assign(gate.size(), S(0));
  dup.assign(gate.size(), S(0));
  for (size_t i = 0; i < gate.size(); ++i) {
    const S s = S(1) / (S(1) + std::exp(-gate[i]));
    dgate[i] = dy[i] * up[i] * (s + gate[i] * s * (S(1) - s));
    dup[i] = dy[i] * gate[i] * s;
  }
}

} // namespace bitpipe::runtime::ref

#endif // BITPIPE_RUNTIME_UNITTESTS_REFERENCE_H
