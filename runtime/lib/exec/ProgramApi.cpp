//===- ProgramApi.cpp - The bp_rt_* calls of bitpipe/program.h --*- C++ -*-===//
//
// Thin C entry points over the Executor. None returns a status (generated
// code has no caller to hand one to): an error is fatal for the whole job,
// with a message that says which call of which step failed and why.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "bitpipe/program.h"

using bitpipe::runtime::Status;
using bitpipe::runtime::formatString;

namespace {

/// Stops the job when \p s is an error; \p where describes the call (only
/// built on the error path).
template <typename Describe>
void check(bp_rt_context *ctx, const Status &s, Describe where) {
  if (!s.isOk())
    ctx->fatal(where() + ": " + s.message());
}

} // namespace

extern "C" {

void bp_rt_load_input(bp_rt_context *ctx, int32_t value, int32_t kind,
                      int64_t mb, int64_t count) {
  check(ctx, ctx->loadInput(value, kind, mb, count), [&] {
    return ctx->describeCall(formatString(
        "load_input of %s for micro-batch %lld",
        kind >= 0 && kind < BP_NUM_INPUT_KINDS ? bp_input_kind_names[kind]
                                               : "an unknown input kind",
        static_cast<long long>(mb)));
  });
}

void bp_rt_forward(bp_rt_context *ctx, int32_t fn, int64_t mb, int32_t in0,
                   int32_t in1, int32_t out0, int32_t saved) {
  check(ctx, ctx->forward(fn, mb, in0, in1, out0, saved),
        [&] { return ctx->describeStageCall("forward", fn, mb); });
}

void bp_rt_backward(bp_rt_context *ctx, int32_t fn, int64_t mb, int32_t saved,
                    int32_t grad0, int32_t out0) {
  check(ctx, ctx->backward(fn, mb, saved, grad0, out0),
        [&] { return ctx->describeStageCall("backward", fn, mb); });
}

void bp_rt_weight_grad(bp_rt_context *ctx, int32_t fn, int64_t mb,
                       int32_t saved) {
  check(ctx, ctx->weightGrad(fn, mb, saved),
        [&] { return ctx->describeStageCall("weight_grad", fn, mb); });
}

void bp_rt_send(bp_rt_context *ctx, int32_t value, int64_t count,
                int32_t peer, int32_t tag) {
  check(ctx, ctx->send(value, count, peer, tag), [&] {
    return ctx->describeCall(
        formatString("send of value %d to %s (tag %d)", value,
                     ctx->describePeer(peer).c_str(), tag));
  });
}

void bp_rt_recv(bp_rt_context *ctx, int32_t value, int64_t count,
                int32_t peer, int32_t tag) {
  check(ctx, ctx->recv(value, count, peer, tag), [&] {
    return ctx->describeCall(
        formatString("recv of value %d from %s (tag %d)", value,
                     ctx->describePeer(peer).c_str(), tag));
  });
}

void bp_rt_end_batch(bp_rt_context *ctx, int32_t batch) {
  check(ctx, ctx->endBatch(batch), [&] {
    return ctx->describeCall(formatString("end of transfer batch %d", batch));
  });
}

void bp_rt_local_copy(bp_rt_context *ctx, int32_t src, int32_t dst) {
  check(ctx, ctx->localCopy(src, dst), [&] {
    return ctx->describeCall(
        formatString("local copy of value %d to %d", src, dst));
  });
}

void bp_rt_allreduce_start(bp_rt_context *ctx, int32_t bucket,
                           int32_t token) {
  check(ctx, ctx->allreduceStart(bucket, token), [&] {
    return ctx->describeCall(
        formatString("all-reduce start of bucket %d", bucket));
  });
}

void bp_rt_allreduce_wait(bp_rt_context *ctx, int32_t token) {
  check(ctx, ctx->allreduceWait(token), [&] {
    return ctx->describeCall(
        formatString("all-reduce wait of token %d", token));
  });
}

void bp_rt_optimizer_step(bp_rt_context *ctx, int64_t microbatches) {
  check(ctx, ctx->optimizerStep(microbatches),
        [&] { return ctx->describeCall("optimizer step"); });
}

void bp_rt_release(bp_rt_context *ctx, int32_t value) {
  check(ctx, ctx->release(value), [&] {
    return ctx->describeCall(formatString("release of value %d", value));
  });
}

} // extern "C"
