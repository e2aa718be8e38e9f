//===- GeluMath.cuh - GELU and its derivative, device side -----------===//
//
// The one device definition of GPT-2's (tanh) and BERT's (erf) GELU, shared by
// the element-wise kernels (Gelu.cu) and the linear layers' unfused epilogues
// (linear/Elementwise.cu). The formulas are the CPU kernel's
// (runtime/lib/cpu/kernels/Gelu.cpp), with the accurate tanhf rather than a
// fast approximation: GELU's output feeds the next matrix product, and the
// fp32 target must match the CPU's to 1e-4.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_GELUMATH_CUH
#define BITPIPE_RUNTIME_CUDA_GELUMATH_CUH

namespace bitpipe::runtime::cuda {

constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

/// 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).
__device__ inline float geluTanh(float v) {
  float u = kGeluSqrt2OverPi * (v + kGeluCubic * v * v * v);
  return 0.5f * v * (1.0f + tanhf(u));
}

/// d geluTanh / dv.
__device__ inline float geluTanhGrad(float v) {
  float th = tanhf(kGeluSqrt2OverPi * (v + kGeluCubic * v * v * v));
  float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
  return 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du;
}

constexpr float kGeluInvSqrt2 = 0.7071067811865476f;
constexpr float kGeluInvSqrt2Pi = 0.3989422804014327f;

/// The exact GELU, 0.5 v (1 + erf(v / sqrt(2))) (BERT's; the CPU kernel is
/// runtime/lib/cpu/kernels/GeluErf.cpp), with the accurate erff.
__device__ inline float geluErf(float v) {
  return 0.5f * v * (1.0f + erff(v * kGeluInvSqrt2));
}

/// d geluErf / dv = Phi(v) + v phi(v).
__device__ inline float geluErfGrad(float v) {
  float cdf = 0.5f * (1.0f + erff(v * kGeluInvSqrt2));
  return cdf + v * kGeluInvSqrt2Pi * expf(-0.5f * v * v);
}

/// The two forms as types, for kernels templated on the form.
struct TanhGelu {
  __device__ static float value(float v) { return geluTanh(v); }
  __device__ static float grad(float v) { return geluTanhGrad(v); }
};
struct ErfGelu {
  __device__ static float value(float v) { return geluErf(v); }
  __device__ static float grad(float v) { return geluErfGrad(v); }
};

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_GELUMATH_CUH
