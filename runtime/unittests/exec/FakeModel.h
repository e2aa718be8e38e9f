//===- FakeModel.h - A hand-compiled two-stage model for executor tests ---===//
//
// What bitpipe-compile would produce for a tiny language model, written by
// hand: stage functions with the uniform entry of program.h that call the
// real CPU kernels, and the manifest fragments describing them.
//
//   stage 0: h = gelu(linear(embedding(tokens), W, b))
//   stage 1: loss = cross_entropy(h wte^T, labels)   (output tied to the
//            token embedding, so wte lives on both stages: on two ranks its
//            gradient is summed over a group, as a real tied embedding's)
//
// Functions (the manifest's order = bitpipe_stage_entries'):
//   0 stage0_fwd         1 stage0_bwd
//   2 stage1_fwd         3 stage1_bwd
//   4 stage1_bwd_input   5 stage1_bwd_weight   (the split form of 3)
//
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_EXEC_FAKEMODEL_H
#define BITPIPE_RUNTIME_UNITTESTS_EXEC_FAKEMODEL_H

#include "bitpipe/program.h"

// Sizes (the JSON below spells the same numbers).
#define FAKE_V 32 // vocabulary
#define FAKE_T 8  // sequence length
#define FAKE_B 2  // micro-batch size
#define FAKE_H 16 // hidden size

enum FakeFunction {
  kStage0Fwd = 0,
  kStage0Bwd = 1,
  kStage1Fwd = 2,
  kStage1Bwd = 3,
  kStage1BwdInput = 4,
  kStage1BwdWeight = 5,
};

// FakeStages.cpp defines bitpipe_stage_entries (these six functions);
// FakePrograms.cpp the rank programs and the manifest.

// Activations and their gradients: [B, T, H] floats.
#define FAKE_ACT_COUNT (FAKE_B * FAKE_T * FAKE_H)
#define FAKE_INPUT_COUNT (FAKE_B * FAKE_T)

// The fake stage functions are host code: the CPU target (FakeCudaTarget
// claims cuda, for the runtime to refuse).
#ifdef FAKE_TARGET_CUDA
#define FAKE_TARGET_NAME "cuda"
#else
#define FAKE_TARGET_NAME "cpu"
#endif
#define FAKE_TARGET_JSON                                                       \
  "\"target\": {\"name\": \"" FAKE_TARGET_NAME "\", \"precision\": \"fp32\"},"

#define FAKE_PARAMS_JSON                                                       \
  "\"params\": ["                                                              \
  "{\"name\": \"embed.tokens\", \"shape\": [32, 16],"                          \
  " \"init\": {\"kind\": \"normal\", \"std\": 0.5}, \"decay\": true},"         \
  "{\"name\": \"embed.pos\", \"shape\": [8, 16],"                              \
  " \"init\": {\"kind\": \"normal\", \"std\": 0.1}, \"decay\": false},"        \
  "{\"name\": \"hidden.weight\", \"shape\": [16, 16],"                         \
  " \"init\": {\"kind\": \"normal\", \"std\": 0.3}, \"decay\": true},"         \
  "{\"name\": \"hidden.bias\", \"shape\": [16],"                               \
  " \"init\": {\"kind\": \"zeros\"}, \"decay\": false}],"

#define FAKE_P(name, shape)                                                    \
  "{\"role\": \"param\", \"param\": \"" name "\", \"shape\": " shape           \
  ", \"dtype\": \"f32\"}"
#define FAKE_R(role, extra, shape, dtype)                                      \
  "{\"role\": \"" role "\"" extra ", \"shape\": " shape                        \
  ", \"dtype\": \"" dtype "\"}"
#define FAKE_ACT "[2, 8, 16]"

#define FAKE_FUNCTIONS_JSON                                                    \
  "\"functions\": ["                                                           \
  "{\"name\": \"stage0_fwd\", \"kind\": \"forward\", \"stage\": 0,"            \
  " \"args\": [" FAKE_P("embed.tokens", "[32, 16]") ","                        \
  FAKE_P("embed.pos", "[8, 16]") "," FAKE_P("hidden.weight", "[16, 16]") ","   \
  FAKE_P("hidden.bias", "[16]") ","                                            \
  FAKE_R("input", ", \"input\": \"tokens\"", "[2, 8]", "i32") "],"             \
  " \"results\": [" FAKE_R("output", "", FAKE_ACT, "f32") ","                  \
  FAKE_R("saved", ", \"index\": 0", FAKE_ACT, "f32") ","                       \
  FAKE_R("saved", ", \"index\": 1", FAKE_ACT, "f32") "]},"                     \
  "{\"name\": \"stage0_bwd\", \"kind\": \"backward\", \"stage\": 0,"           \
  " \"args\": [" FAKE_R("forward_arg", ", \"index\": 2", "[16, 16]", "f32") "," \
  FAKE_R("forward_arg", ", \"index\": 4", "[2, 8]", "i32") ","                 \
  FAKE_R("saved", ", \"index\": 0", FAKE_ACT, "f32") ","                       \
  FAKE_R("saved", ", \"index\": 1", FAKE_ACT, "f32") ","                       \
  FAKE_R("grad_of_result", ", \"index\": 0", FAKE_ACT, "f32") "],"             \
  " \"results\": [" FAKE_P("embed.tokens", "[32, 16]") ","                     \
  FAKE_P("embed.pos", "[8, 16]") "," FAKE_P("hidden.weight", "[16, 16]") ","   \
  FAKE_P("hidden.bias", "[16]") "]},"                                          \
  "{\"name\": \"stage1_fwd\", \"kind\": \"forward\", \"stage\": 1,"            \
  " \"args\": [" FAKE_P("embed.tokens", "[32, 16]") ","                        \
  FAKE_R("activation", "", FAKE_ACT, "f32") ","                                \
  FAKE_R("input", ", \"input\": \"labels\"", "[2, 8]", "i32") "],"             \
  " \"results\": [" FAKE_R("output", "", "[]", "f32") ","                      \
  FAKE_R("saved", ", \"index\": 0", "[16, 32]", "f32") "]},"                   \
  "{\"name\": \"stage1_bwd\", \"kind\": \"backward\", \"stage\": 1,"           \
  " \"args\": [" FAKE_P("embed.tokens", "[32, 16]") ","                        \
  FAKE_R("forward_arg", ", \"index\": 1", FAKE_ACT, "f32") ","                 \
  FAKE_R("forward_arg", ", \"index\": 2", "[2, 8]", "i32") ","                 \
  FAKE_R("saved", ", \"index\": 0", "[16, 32]", "f32") "],"                    \
  " \"results\": [" FAKE_P("embed.tokens", "[32, 16]") ","                     \
  FAKE_R("grad_of_arg", ", \"index\": 1", FAKE_ACT, "f32") "]},"               \
  "{\"name\": \"stage1_bwd_input\", \"kind\": \"backward_input\","             \
  " \"stage\": 1,"                                                             \
  " \"args\": [" FAKE_P("embed.tokens", "[32, 16]") ","                        \
  FAKE_R("forward_arg", ", \"index\": 2", "[2, 8]", "i32") ","                 \
  FAKE_R("saved", ", \"index\": 0", "[16, 32]", "f32") "],"                    \
  " \"results\": [" FAKE_R("grad_of_arg", ", \"index\": 1", FAKE_ACT, "f32")   \
  "," FAKE_R("stash", ", \"index\": 0", "[16, 32]", "f32") "]},"               \
  "{\"name\": \"stage1_bwd_weight\", \"kind\": \"backward_weight\","           \
  " \"stage\": 1,"                                                             \
  " \"args\": [" FAKE_R("forward_arg", ", \"index\": 1", FAKE_ACT, "f32") ","  \
  FAKE_R("stash", ", \"index\": 0", "[16, 32]", "f32") "],"                    \
  " \"results\": [" FAKE_P("embed.tokens", "[32, 16]") "]}],"

#endif // BITPIPE_RUNTIME_UNITTESTS_EXEC_FAKEMODEL_H
