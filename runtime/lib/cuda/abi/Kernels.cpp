//===- Kernels.cpp - runtime.h's kernels on the context's stream ----------===//
//
// On the CUDA target, runtime.h's bp_<kernel> (fp32) and bp_<kernel>_bf16
// are cuda.h's bp_cuda_<kernel>_f32 and bp_cuda_<kernel> on the stream of
// the execution context (bp_cuda_set_stream): the same parameters, spelled
// from bitpipe/abi/Kernels.h on both sides, so each definition below is one
// forwarding call. Attention (Attention.cpp, GroupedAttention.cpp) is not
// here: it chooses between cuDNN and the runtime's own kernels.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"

// Every kernel of Kernels.h but attention: cuda.h's BP_CUDA_KERNELS without
// attention_fwd and attention_bwd.
#define BP_STREAM_KERNELS_(X)                                                  \
  X(embedding_fwd)                                                             \
  X(embedding_bwd)                                                             \
  X(layer_norm_fwd)                                                            \
  X(layer_norm_bwd)                                                            \
  X(rms_norm_fwd)                                                              \
  X(rms_norm_bwd)                                                              \
  X(linear_fwd)                                                                \
  X(linear_bwd_input)                                                          \
  X(linear_gelu_fwd)                                                           \
  X(linear_bwd_input_gelu)                                                     \
  X(linear_bwd_weight)                                                         \
  X(rotary_fwd)                                                                \
  X(rotary_bwd)                                                                \
  X(gelu_fwd)                                                                  \
  X(gelu_bwd)                                                                  \
  X(gelu_erf_fwd)                                                              \
  X(gelu_erf_bwd)                                                              \
  X(swiglu_fwd)                                                                \
  X(swiglu_bwd)                                                                \
  X(add_fwd)                                                                   \
  X(cross_entropy_fwd)                                                         \
  X(cross_entropy_bwd)

#define BP_DEFINE_ON_STREAM_(kernel)                                           \
  extern "C" bp_status_t bp_##kernel(BP_KERNEL_PARAMS(F32, kernel)) {          \
    return bp_cuda_##kernel##_f32(BP_KERNEL_ARG_NAMES(kernel),                 \
                                  bp_cuda_stream());                           \
  }                                                                            \
  extern "C" bp_status_t bp_##kernel##_bf16(BP_KERNEL_PARAMS(BF16, kernel)) {  \
    return bp_cuda_##kernel(BP_KERNEL_ARG_NAMES(kernel), bp_cuda_stream());    \
  }
BP_STREAM_KERNELS_(BP_DEFINE_ON_STREAM_)
