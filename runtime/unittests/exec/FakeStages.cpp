//===- FakeStages.cpp - Hand-compiled stage functions of the fake model ---===//
//
// Each entry reads its arguments from buffers[0..A-1] and writes fresh
// malloc'd results to buffers[A..A+R-1], as generated code does (program.h),
// except the parameter gradients: their slots hold the rank's float64
// accumulators, which the kernels' float64 forms add into.
//
// BITPIPE_FAKE_NAN_BACKWARD=K makes the K-th call (from 1, in this process)
// of stage 0's backward return a NaN in hidden.bias's gradient: a transient
// non-finite gradient (exec-test.sh, fault-nonfinite).
//
//===----------------------------------------------------------------------===//

#include "FakeModel.h"

#include "bitpipe/runtime.h"

#include <cstdlib>

namespace {

/// d loss / d loss, as runtime.h's bp_cross_entropy_bwd takes it: a pointer
/// to one float in the tensors' memory.
const float kUnitLossGrad = 1.0f;

constexpr int64_t V = FAKE_V, T = FAKE_T, B = FAKE_B, H = FAKE_H;
constexpr int64_t N = B * T; // rows

float *fresh(int64_t n) {
  float *p = static_cast<float *>(bp_alloc(n * sizeof(float)));
  bp_check(bp_fill(p, 0.0f, n), "fill");
  return p;
}

const float *f(void *p) { return static_cast<const float *>(p); }
double *acc(void *p) { return static_cast<double *>(p); }
const int32_t *i32(void *p) { return static_cast<const int32_t *>(p); }

// args: wte, wpe, W, b, tokens; results: g, saved e, saved h.
void stage0Fwd(void **buf) {
  float *e = fresh(N * H), *h = fresh(N * H), *g = fresh(N * H);
  bp_check(bp_embedding_fwd(i32(buf[4]), f(buf[0]), f(buf[1]), e, B, T, H, V),
           "embedding");
  bp_check(bp_linear_fwd(e, f(buf[2]), f(buf[3]), h, N, H, H), "linear");
  bp_check(bp_gelu_fwd(h, g, N * H), "gelu");
  buf[5] = g;
  buf[6] = e;
  buf[7] = h;
}

// args: W (forward arg 2), tokens (forward arg 4), e, h, dg;
// results (accumulated): dwte, dwpe, dW, db.
void stage0Bwd(void **buf) {
  float *dh = fresh(N * H), *de = fresh(N * H);
  bp_check(bp_gelu_bwd(f(buf[4]), f(buf[3]), dh, N * H), "gelu_bwd");
  bp_check(bp_linear_bwd_input(dh, f(buf[0]), de, N, H, H), "linear_bwd_in");
  bp_check(bp_linear_bwd_weight_g64(dh, f(buf[2]), acc(buf[7]), acc(buf[8]), N,
                                    H, H),
           "linear_bwd_w");
  bp_check(bp_embedding_bwd_g64(i32(buf[1]), de, acc(buf[5]), acc(buf[6]), B, T,
                                H, V),
           "embedding_bwd");
  bp_free(dh);
  bp_free(de);
  static long calls = 0;
  const char *nanAt = std::getenv("BITPIPE_FAKE_NAN_BACKWARD");
  if (nanAt && ++calls == std::atol(nanAt))
    acc(buf[8])[0] = __builtin_nan("");
}

// args: wte, x, labels; results: loss, saved logits.
void stage1Fwd(void **buf) {
  float *logits = fresh(N * V), *loss = fresh(1);
  bp_check(bp_linear_fwd(f(buf[1]), f(buf[0]), nullptr, logits, N, H, V),
           "logits");
  // The rows' normalisers are scratch: the backward computes them again,
  // as a compiled stage under --recompute selective does.
  float *rowMax = fresh(N), *logSum = fresh(N);
  bp_check(bp_cross_entropy_fwd(logits, i32(buf[2]), loss, rowMax, logSum, N, V,
                                BP_IGNORE_INDEX),
           "cross_entropy");
  bp_free(rowMax);
  bp_free(logSum);
  buf[3] = loss;
  buf[4] = logits;
}

/// dlogits of the loss; d loss / d loss = 1 (the optimizer averages).
float *lossGrad(void *logits, void *labels) {
  float *d = fresh(N * V), *loss = fresh(1), *rowMax = fresh(N),
        *logSum = fresh(N);
  bp_check(bp_cross_entropy_fwd(f(logits), i32(labels), loss, rowMax, logSum, N,
                                V, BP_IGNORE_INDEX),
           "cross_entropy (its normalisers again)");
  bp_check(bp_cross_entropy_bwd(f(logits), i32(labels), &kUnitLossGrad, rowMax,
                                logSum, d, N, V, BP_IGNORE_INDEX),
           "cross_entropy_bwd");
  bp_free(loss);
  bp_free(rowMax);
  bp_free(logSum);
  return d;
}

// args: wte, x (forward arg 1), labels (forward arg 2), logits;
// results: dwte (accumulated), dx.
void stage1Bwd(void **buf) {
  float *dlogits = lossGrad(buf[3], buf[2]);
  float *dx = fresh(N * H);
  bp_check(bp_linear_bwd_input(dlogits, f(buf[0]), dx, N, H, V), "dx");
  bp_check(bp_linear_bwd_weight_g64(dlogits, f(buf[1]), acc(buf[4]), nullptr, N,
                                    H, V),
           "dwte");
  bp_free(dlogits);
  buf[5] = dx;
}

// args: wte, labels (forward arg 2), logits; results: dx, stash dlogits.
void stage1BwdInput(void **buf) {
  float *dlogits = lossGrad(buf[2], buf[1]);
  float *dx = fresh(N * H);
  bp_check(bp_linear_bwd_input(dlogits, f(buf[0]), dx, N, H, V), "dx");
  buf[3] = dx;
  buf[4] = dlogits;
}

// args: x (forward arg 1), stash dlogits; results: dwte (accumulated).
void stage1BwdWeight(void **buf) {
  bp_check(bp_linear_bwd_weight_g64(f(buf[1]), f(buf[0]), acc(buf[2]), nullptr,
                                    N, H, V),
           "dwte");
}

} // namespace

// The symbols of program.h; every configuration shares these functions.
const bp_stage_entry_t bitpipe_stage_entries[] = {
    stage0Fwd, stage0Bwd, stage1Fwd, stage1Bwd, stage1BwdInput,
    stage1BwdWeight,
};
const int32_t bitpipe_num_stage_entries = 6;
