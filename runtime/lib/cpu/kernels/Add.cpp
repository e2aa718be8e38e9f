//===- Add.cpp - Residual add -----------------------------------*- C++ -*-===//
//
// out = a + b. The backward needs no kernel (both operand gradients are the
// output gradient); this kernel also sums gradients where a value fans out.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

using namespace bitpipe::runtime::cpu;

/// Elements [first, last) of bp_add_fwd.
BP_CPU_CLONES static void addRange(const float *a, const float *b, float *out,
                                   int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i)
    out[i] = a[i] + b[i];
}

extern "C" bp_status_t bp_add_fwd(const float *a, const float *b, float *out,
                                  int64_t n) {
  BP_PROFILE_KERNEL(add_fwd);
  if (!BP_KERNEL_ARGS_VALID(add_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  // Element-wise with no reads after the write of the same index, so out may
  // alias a or b.
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    addRange(a, b, out, first, last);
  });
  return BP_OK;
}
