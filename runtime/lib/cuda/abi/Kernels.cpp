//===- Kernels.cpp - runtime.h's kernels on the context's stream ----------===//
//
// On the CUDA target, runtime.h's bp_<kernel> (fp32) and bp_<kernel>_bf16
// are cuda.h's bp_cuda_<kernel>_f32 and bp_cuda_<kernel> on the stream of
// the execution context (bp_cuda_set_stream): the same parameters, spelled
// from bitpipe/abi/Kernels.h on both sides, so each definition below is one
// forwarding call, for every kernel of cuda.h's BP_CUDA_STREAM_KERNELS.
// Attention, with and without dropout (Attention.cpp, GroupedAttention.cpp),
// is not among them: it chooses between cuDNN and the runtime's own kernels.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"

#define BP_DEFINE_ON_STREAM_(kernel)                                           \
  extern "C" bp_status_t bp_##kernel(BP_KERNEL_PARAMS(F32, kernel)) {          \
    return bp_cuda_##kernel##_f32(BP_KERNEL_ARG_NAMES(kernel),                 \
                                  bp_cuda_stream());                           \
  }                                                                            \
  extern "C" bp_status_t bp_##kernel##_bf16(BP_KERNEL_PARAMS(BF16, kernel)) {  \
    return bp_cuda_##kernel(BP_KERNEL_ARG_NAMES(kernel), bp_cuda_stream());    \
  }
BP_CUDA_STREAM_KERNELS(BP_DEFINE_ON_STREAM_)
