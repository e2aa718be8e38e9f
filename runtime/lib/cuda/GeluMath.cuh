//===- GeluMath.cuh - GPT-2's GELU and its derivative, device side ----===//
//
// The one device definition of GPT-2's GELU, shared by the element-wise
// kernels (Gelu.cu) and the linear layers' unfused epilogues
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

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_GELUMATH_CUH
