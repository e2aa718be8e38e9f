//===- SleefGelu.cpp - GELU forwards on SLEEF's AVX2 functions ------------===//
//
// The tanh and exact GELU forwards as the kernels compute them, through
// SLEEF's 8-wide 1-ulp tanhf and erff, for bench-elementwise's comparison.
// Compiled with -mavx2 -mfma (sleef.h declares the AVX2 functions only
// then); the caller checks the CPU first.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

void geluTanhFwdSleef(const float *x, float *y, int64_t n) {
  const __m256 k = _mm256_set1_ps(0.7978845608028654f),
               c = _mm256_set1_ps(0.044715f), half = _mm256_set1_ps(0.5f),
               one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 u = _mm256_mul_ps(
        k, _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v));
    __m256 t = Sleef_tanhf8_u10avx2(u);
    _mm256_storeu_ps(
        y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, t)));
  }
  for (; i < n; ++i)
    y[i] = 0.5f * x[i] *
           (1.0f + Sleef_tanhf_u10(0.7978845608028654f *
                                   (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

void geluErfFwdSleef(const float *x, float *y, int64_t n) {
  const __m256 s = _mm256_set1_ps(0.7071067811865476f),
               half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 e = Sleef_erff8_u10avx2(_mm256_mul_ps(v, s));
    _mm256_storeu_ps(
        y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, e)));
  }
  for (; i < n; ++i)
    y[i] = 0.5f * x[i] * (1.0f + Sleef_erff_u10(x[i] * 0.7071067811865476f));
}
