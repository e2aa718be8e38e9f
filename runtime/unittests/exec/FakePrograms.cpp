//===- FakePrograms.cpp - Hand-written rank programs of the fake model ----===//
//
// The rank programs and manifests bitpipe-compile would emit for the fake
// model (FakeModel.h), one configuration per executable, chosen by a
// compile definition. As compiled ones, they are one program per PIPELINE
// rank, which every data-parallel copy runs: peers and groups are pipeline
// ranks, and the executor maps them to the copy's world ranks (program.h).
//
//   FAKE_SINGLE     1 rank, both stages, 4 micro-batches, GPipe order, a
//                   local copy between the stages, full backward;
//   FAKE_PIPE2      2 ranks, one stage each, 4 micro-batches: activations
//                   and gradients sent in batches, split backward with the
//                   weight halves deferred (zero-bubble style), the tied
//                   embedding's gradient all-reduced over both ranks;
//   FAKE_DP2        2 data-parallel copies of FAKE_SINGLE (1 program, 2
//                   world ranks), 2 micro-batches each, gradients in two
//                   buckets over a group of one pipeline rank;
//   FAKE_PIPE2_DP2  2 copies of FAKE_PIPE2 (2 programs, 4 world ranks), 2
//                   micro-batches each: copy 1's pipeline ranks are world
//                   ranks 2 and 3, the embedding is all-reduced over all 4
//                   world ranks, the rest over 0 and 2.
//   FAKE_PIPE2_CROSSED  FAKE_PIPE2's ranks in 1F1B order, with each
//                   hand-off a batch of its own: in the steady state rank 0
//                   sends an activation, then receives a gradient, while
//                   rank 1 sends that gradient, then receives the
//                   activation. The two batches cross: on one stream per
//                   rank under NCCL's rules (rendezvous sends, one queue)
//                   each send waits for a receive queued behind the
//                   other's send, a deadlock; on a stream per channel, or
//                   under MPI's rules, it runs.
// FAKE_BERT switches the model family (masked-LM data) for any of them.
// The manifests list the channels and say "channel" transfer streams;
// FAKE_SHARED_STREAMS says "shared" instead (one stream per rank). They
// say "flat" gradient sync; FAKE_HIERARCHICAL says "hierarchical" instead
// (docs/data-parallel.md, "Two levels": FAKE_PIPE2_DP2's embedding group
// of both pipeline ranks in two copies then sums in two levels).
// FAKE_WORLD_PROGRAMS lists one program per WORLD rank instead (what a
// version-2 compiler emitted), which the runtime must refuse.
//
// Each configuration trains on 4 micro-batches per step, so all of them
// must match FAKE_SINGLE (the executor equivalence tests).
//
// BITPIPE_FAKE_KILL=R:S makes pipeline rank R kill itself (SIGKILL) in the
// middle of step S, in every copy: the dead-rank test.
// BITPIPE_FAKE_BUG=1 makes the first stage release its first tokens twice,
// as a miscompiled program would: the executor must stop the whole job.
// BITPIPE_FAKE_BAD_PEER=P makes it send its first activation to pipeline
// rank P instead of its partner (P = 2 with 2 pipeline ranks: no such rank).
// BITPIPE_FAKE_STALL=W makes WORLD rank W (Open MPI's OMPI_COMM_WORLD_RANK)
// sleep for a minute in step 2 before it starts its all-reduces, as a
// stuck peer would: its group's members must time out naming the sum.
//
//===----------------------------------------------------------------------===//

#include "FakeModel.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#ifdef FAKE_BERT
#define FAKE_MODEL_JSON                                                        \
  "\"model\": {\"name\": \"fake\", \"family\": \"bert\", \"vocab\": 32,"       \
  " \"seq_len\": 8, \"microbatch_size\": 2, \"mask_token\": 31},"
#else
#define FAKE_MODEL_JSON                                                        \
  "\"model\": {\"name\": \"fake\", \"family\": \"gpt\", \"vocab\": 32,"        \
  " \"seq_len\": 8, \"microbatch_size\": 2},"
#endif

namespace {

/// Counts this process's steps (rank programs run once per step).
int stepNumber = 0;

/// BITPIPE_FAKE_KILL=R:S: pipeline rank R dies in step S.
void maybeDie(int rank) {
  const char *spec = std::getenv("BITPIPE_FAKE_KILL");
  int r = -1, s = -1;
  if (spec && std::sscanf(spec, "%d:%d", &r, &s) == 2 && r == rank &&
      s == stepNumber) {
    std::fprintf(stderr, "fake program: rank %d kills itself in step %d\n",
                 rank, stepNumber);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
}

/// BITPIPE_FAKE_STALL=W: world rank W is stuck in step 2.
void maybeStall() {
  const char *stalled = std::getenv("BITPIPE_FAKE_STALL");
  const char *me = std::getenv("OMPI_COMM_WORLD_RANK");
  if (stalled && me && std::atoi(stalled) == std::atoi(me) && stepNumber == 2) {
    std::fprintf(stderr, "fake program: world rank %s stalls in step 2\n", me);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(60));
  }
}

/// Both stages on one rank (FAKE_SINGLE, FAKE_DP2). Values per
/// micro-batch: tokens, labels, stage-0 output, its local copy, two saved
/// handles, the activation gradient; then one token per bucket.
[[maybe_unused]] void bothStages(bp_rt_context *ctx, int rank, int n, int world_mbs,
                int buckets) {
  ++stepNumber;
  enum { kTok, kLab, kAct, kCopy, kSaved0, kSaved1, kGrad, kPerMb };
  auto id = [](int mb, int slot) { return mb * kPerMb + slot; };
  for (int mb = 0; mb < n; ++mb) {
    bp_rt_load_input(ctx, id(mb, kTok), 0, mb, FAKE_INPUT_COUNT);
    bp_rt_forward(ctx, kStage0Fwd, mb, id(mb, kTok), -1, id(mb, kAct),
                  id(mb, kSaved0));
    bp_rt_release(ctx, id(mb, kTok));
    // The V's bottom: two consecutive stages on one rank.
    bp_rt_local_copy(ctx, id(mb, kAct), id(mb, kCopy));
    bp_rt_release(ctx, id(mb, kAct));
    bp_rt_load_input(ctx, id(mb, kLab), 1, mb, FAKE_INPUT_COUNT);
    // The loss output is not bound (out0 = -1): the executor accumulates it.
    bp_rt_forward(ctx, kStage1Fwd, mb, id(mb, kCopy), id(mb, kLab), -1,
                  id(mb, kSaved1));
    // The saved handle keeps both alive for the backward.
    bp_rt_release(ctx, id(mb, kCopy));
    bp_rt_release(ctx, id(mb, kLab));
  }
  maybeDie(rank);
  for (int mb = n - 1; mb >= 0; --mb) {
    bp_rt_backward(ctx, kStage1Bwd, mb, id(mb, kSaved1), -1, id(mb, kGrad));
    bp_rt_backward(ctx, kStage0Bwd, mb, id(mb, kSaved0), id(mb, kGrad), -1);
    bp_rt_release(ctx, id(mb, kGrad));
  }
  // Buckets in reverse order (as DDP: the last layers' gradients are ready
  // first); every member of the group does the same.
  for (int b = buckets - 1; b >= 0; --b)
    bp_rt_allreduce_start(ctx, b, n * kPerMb + b);
  for (int b = 0; b < buckets; ++b)
    bp_rt_allreduce_wait(ctx, n * kPerMb + b);
  bp_rt_optimizer_step(ctx, world_mbs);
}

/// Stage 0 of a two-rank pipeline (FAKE_PIPE2, FAKE_PIPE2_DP2). Values per
/// micro-batch: tokens, output, handle, gradient; then bucket tokens.
[[maybe_unused]] void firstStage(bp_rt_context *ctx, int rank, int peer, int n, int world_mbs,
                int buckets) {
  ++stepNumber;
  enum { kTok, kAct, kSaved, kGrad, kPerMb };
  auto id = [](int mb, int slot) { return mb * kPerMb + slot; };
  for (int mb = 0; mb < n; ++mb) {
    bp_rt_load_input(ctx, id(mb, kTok), 0, mb, FAKE_INPUT_COUNT);
    bp_rt_forward(ctx, kStage0Fwd, mb, id(mb, kTok), -1, id(mb, kAct),
                  id(mb, kSaved));
    bp_rt_release(ctx, id(mb, kTok));
    if (mb == 0 && std::getenv("BITPIPE_FAKE_BUG"))
      bp_rt_release(ctx, id(mb, kTok));
    const char *badPeer = std::getenv("BITPIPE_FAKE_BAD_PEER");
    bp_rt_send(ctx, id(mb, kAct), FAKE_ACT_COUNT,
               mb == 0 && badPeer ? std::atoi(badPeer) : peer, mb);
    bp_rt_end_batch(ctx, mb);
    bp_rt_release(ctx, id(mb, kAct)); // the pending send still holds it
  }
  maybeDie(rank);
  // All gradient receives in one batch, then waited for one by one; in the
  // order the last stage sends them, as compiled programs order each
  // channel alike at both ends (NCCL matches transfers by order, not tag).
  for (int mb = n - 1; mb >= 0; --mb)
    bp_rt_recv(ctx, id(mb, kGrad), FAKE_ACT_COUNT, peer, 100 + mb);
  bp_rt_end_batch(ctx, n);
  for (int mb = n - 1; mb >= 0; --mb) {
    bp_rt_backward(ctx, kStage0Bwd, mb, id(mb, kSaved), id(mb, kGrad), -1);
    bp_rt_release(ctx, id(mb, kGrad));
  }
  maybeStall();
  for (int b = 0; b < buckets; ++b)
    bp_rt_allreduce_start(ctx, b, n * kPerMb + b);
  for (int b = 0; b < buckets; ++b)
    bp_rt_allreduce_wait(ctx, n * kPerMb + b);
  bp_rt_optimizer_step(ctx, world_mbs);
}

/// Stage 0 of FAKE_PIPE2_CROSSED: 1F1B with one warm-up forward. Values
/// as firstStage's.
[[maybe_unused]] void firstStageCrossed(bp_rt_context *ctx, int rank, int peer,
                                        int n, int world_mbs) {
  ++stepNumber;
  enum { kTok, kAct, kSaved, kGrad, kPerMb };
  auto id = [](int mb, int slot) { return mb * kPerMb + slot; };
  auto forward = [&](int mb) {
    bp_rt_load_input(ctx, id(mb, kTok), 0, mb, FAKE_INPUT_COUNT);
    bp_rt_forward(ctx, kStage0Fwd, mb, id(mb, kTok), -1, id(mb, kAct),
                  id(mb, kSaved));
    bp_rt_release(ctx, id(mb, kTok));
    bp_rt_send(ctx, id(mb, kAct), FAKE_ACT_COUNT, peer, mb);
    bp_rt_end_batch(ctx, 2 * mb);
    bp_rt_release(ctx, id(mb, kAct));
  };
  auto backward = [&](int mb) {
    bp_rt_recv(ctx, id(mb, kGrad), FAKE_ACT_COUNT, peer, 100 + mb);
    bp_rt_end_batch(ctx, 2 * mb + 1);
    bp_rt_backward(ctx, kStage0Bwd, mb, id(mb, kSaved), id(mb, kGrad), -1);
    bp_rt_release(ctx, id(mb, kGrad));
  };
  forward(0);
  maybeDie(rank);
  for (int mb = 1; mb < n; ++mb) {
    forward(mb);      // sends activation mb, then
    backward(mb - 1); // receives gradient mb - 1: crossed with rank 1
  }
  backward(n - 1);
  bp_rt_allreduce_start(ctx, 0, n * kPerMb);
  bp_rt_allreduce_wait(ctx, n * kPerMb);
  bp_rt_optimizer_step(ctx, world_mbs);
}

/// Stage 1 of FAKE_PIPE2_CROSSED: each micro-batch received, forward,
/// backward, its gradient sent. Values as lastStage's.
[[maybe_unused]] void lastStageCrossed(bp_rt_context *ctx, int rank, int peer,
                                       int n, int world_mbs) {
  ++stepNumber;
  enum { kAct, kLab, kSaved, kGrad, kLoss, kPerMb };
  auto id = [](int mb, int slot) { return mb * kPerMb + slot; };
  maybeDie(rank);
  for (int mb = 0; mb < n; ++mb) {
    bp_rt_recv(ctx, id(mb, kAct), FAKE_ACT_COUNT, peer, mb);
    bp_rt_end_batch(ctx, 2 * mb);
    bp_rt_load_input(ctx, id(mb, kLab), 1, mb, FAKE_INPUT_COUNT);
    bp_rt_forward(ctx, kStage1Fwd, mb, id(mb, kAct), id(mb, kLab), -1,
                  id(mb, kSaved));
    bp_rt_release(ctx, id(mb, kAct));
    bp_rt_release(ctx, id(mb, kLab));
    bp_rt_backward(ctx, kStage1Bwd, mb, id(mb, kSaved), -1, id(mb, kGrad));
    bp_rt_send(ctx, id(mb, kGrad), FAKE_ACT_COUNT, peer, 100 + mb);
    bp_rt_end_batch(ctx, 2 * mb + 1);
    bp_rt_release(ctx, id(mb, kGrad));
  }
  bp_rt_allreduce_start(ctx, 0, n * kPerMb);
  bp_rt_allreduce_wait(ctx, n * kPerMb);
  bp_rt_optimizer_step(ctx, world_mbs);
}

/// Stage 1 (the loss) of a two-rank pipeline. Values per micro-batch:
/// activation, labels, handle, gradient, loss; then the bucket token.
[[maybe_unused]] void lastStage(bp_rt_context *ctx, int rank, int peer, int n, int world_mbs) {
  ++stepNumber;
  enum { kAct, kLab, kSaved, kGrad, kLoss, kPerMb };
  auto id = [](int mb, int slot) { return mb * kPerMb + slot; };
  for (int mb = 0; mb < n; ++mb)
    bp_rt_recv(ctx, id(mb, kAct), FAKE_ACT_COUNT, peer, mb);
  bp_rt_end_batch(ctx, 0);
  for (int mb = 0; mb < n; ++mb) {
    bp_rt_load_input(ctx, id(mb, kLab), 1, mb, FAKE_INPUT_COUNT);
    // The loss bound to a value this time (and released unread).
    bp_rt_forward(ctx, kStage1Fwd, mb, id(mb, kAct), id(mb, kLab),
                  id(mb, kLoss), id(mb, kSaved));
    bp_rt_release(ctx, id(mb, kLoss));
    bp_rt_release(ctx, id(mb, kAct));
    bp_rt_release(ctx, id(mb, kLab));
  }
  maybeDie(rank);
  for (int mb = n - 1; mb >= 0; --mb) {
    bp_rt_backward(ctx, kStage1BwdInput, mb, id(mb, kSaved), -1,
                   id(mb, kGrad));
    bp_rt_send(ctx, id(mb, kGrad), FAKE_ACT_COUNT, peer, 100 + mb);
    bp_rt_end_batch(ctx, 1 + mb);
    bp_rt_release(ctx, id(mb, kGrad));
  }
  // The deferred weight halves (zero-bubble schedules fill bubbles so).
  for (int mb = 0; mb < n; ++mb)
    bp_rt_weight_grad(ctx, kStage1BwdWeight, mb, id(mb, kSaved));
  maybeStall();
  bp_rt_allreduce_start(ctx, 0, n * kPerMb);
  bp_rt_allreduce_wait(ctx, n * kPerMb);
  bp_rt_optimizer_step(ctx, world_mbs);
}

#ifdef FAKE_SHARED_STREAMS
#define FAKE_STREAMS_JSON " \"transfer_streams\": \"shared\","
#else
#define FAKE_STREAMS_JSON " \"transfer_streams\": \"channel\","
#endif
#ifdef FAKE_HIERARCHICAL
#define FAKE_GRADIENT_SYNC_JSON " \"gradient_sync\": \"hierarchical\"},"
#else
#define FAKE_GRADIENT_SYNC_JSON " \"gradient_sync\": \"flat\"},"
#endif
// The two ranks' channels: activations 0 -> 1, their gradients 1 -> 0.
#define FAKE_PIPE2_CHANNELS_JSON                                               \
  " \"channels\": [[0, 1], [1, 0]]," FAKE_GRADIENT_SYNC_JSON

#if defined(FAKE_SINGLE)
void rank0(bp_rt_context *c) { bothStages(c, 0, 4, 4, 0); }
#define FAKE_RANKS rank0
#define FAKE_TAIL_JSON                                                         \
  "\"schedule\": {\"name\": \"gpipe\", \"microbatches\": 4, \"devices\": 1,"   \
  " \"data_parallel\": 1, \"world_size\": 1," FAKE_STREAMS_JSON                \
  " \"channels\": []," FAKE_GRADIENT_SYNC_JSON "\"groups\": [],"               \
  "\"ranks\": [{\"num_values\": 28,"                                           \
  " \"params\": [\"embed.tokens\", \"embed.pos\", \"hidden.weight\","          \
  " \"hidden.bias\"], \"buckets\": []}]"
#elif defined(FAKE_PIPE2)
void rank0(bp_rt_context *c) { firstStage(c, 0, 1, 4, 4, 1); }
void rank1(bp_rt_context *c) { lastStage(c, 1, 0, 4, 4); }
#define FAKE_RANKS rank0, rank1
#define FAKE_TAIL_JSON                                                         \
  "\"schedule\": {\"name\": \"gpipe\", \"microbatches\": 4, \"devices\": 2,"   \
  " \"data_parallel\": 1, \"world_size\": 2," FAKE_STREAMS_JSON                \
  FAKE_PIPE2_CHANNELS_JSON                                                     \
  "\"groups\": [[0, 1]],"                                                      \
  "\"ranks\": [{\"num_values\": 17,"                                           \
  " \"params\": [\"embed.tokens\", \"embed.pos\", \"hidden.weight\","          \
  " \"hidden.bias\"],"                                                         \
  " \"buckets\": [{\"group\": 0, \"params\": [\"embed.tokens\"]}]},"           \
  "{\"num_values\": 21, \"params\": [\"embed.tokens\"],"                       \
  " \"buckets\": [{\"group\": 0, \"params\": [\"embed.tokens\"]}]}]"
#elif defined(FAKE_PIPE2_CROSSED)
void rank0(bp_rt_context *c) { firstStageCrossed(c, 0, 1, 4, 4); }
void rank1(bp_rt_context *c) { lastStageCrossed(c, 1, 0, 4, 4); }
#define FAKE_RANKS rank0, rank1
#define FAKE_TAIL_JSON                                                         \
  "\"schedule\": {\"name\": \"1f1b\", \"microbatches\": 4, \"devices\": 2,"    \
  " \"data_parallel\": 1, \"world_size\": 2," FAKE_STREAMS_JSON                \
  FAKE_PIPE2_CHANNELS_JSON                                                     \
  "\"groups\": [[0, 1]],"                                                      \
  "\"ranks\": [{\"num_values\": 17,"                                           \
  " \"params\": [\"embed.tokens\", \"embed.pos\", \"hidden.weight\","          \
  " \"hidden.bias\"],"                                                         \
  " \"buckets\": [{\"group\": 0, \"params\": [\"embed.tokens\"]}]},"           \
  "{\"num_values\": 21, \"params\": [\"embed.tokens\"],"                       \
  " \"buckets\": [{\"group\": 0, \"params\": [\"embed.tokens\"]}]}]"
#elif defined(FAKE_DP2)
// One program; world ranks 0 and 1 run it as copies 0 and 1.
void rank0(bp_rt_context *c) { bothStages(c, 0, 2, 4, 2); }
#define FAKE_RANKS rank0
#define FAKE_TAIL_JSON                                                         \
  "\"schedule\": {\"name\": \"gpipe\", \"microbatches\": 2, \"devices\": 1,"   \
  " \"data_parallel\": 2, \"world_size\": 2," FAKE_STREAMS_JSON                \
  " \"channels\": []," FAKE_GRADIENT_SYNC_JSON "\"groups\": [[0]],"            \
  "\"ranks\": [{\"num_values\": 16,"                                           \
  " \"params\": [\"embed.tokens\", \"embed.pos\", \"hidden.weight\","          \
  " \"hidden.bias\"], \"buckets\": ["                                          \
  "{\"group\": 0, \"params\": [\"embed.tokens\"]},"                            \
  "{\"group\": 0, \"params\": [\"hidden.weight\", \"hidden.bias\","            \
  " \"embed.pos\"]}]}]"
#elif defined(FAKE_PIPE2_DP2)
// Two programs, peers as pipeline ranks; world rank = copy * 2 + pipeline
// rank, so copy 1's stages (world ranks 2 and 3) talk to each other.
void rank0(bp_rt_context *c) { firstStage(c, 0, 1, 2, 4, 2); }
void rank1(bp_rt_context *c) { lastStage(c, 1, 0, 2, 4); }
#define FAKE_RANKS rank0, rank1
#define FAKE_TAIL_JSON                                                         \
  "\"schedule\": {\"name\": \"gpipe\", \"microbatches\": 2, \"devices\": 2,"   \
  " \"data_parallel\": 2, \"world_size\": 4," FAKE_STREAMS_JSON                \
  FAKE_PIPE2_CHANNELS_JSON                                                     \
  "\"groups\": [[0, 1], [0]],"                                                 \
  "\"ranks\": [{\"num_values\": 10,"                                           \
  " \"params\": [\"embed.tokens\", \"embed.pos\", \"hidden.weight\","          \
  " \"hidden.bias\"], \"buckets\": ["                                          \
  "{\"group\": 1, \"params\": [\"hidden.weight\", \"hidden.bias\","            \
  " \"embed.pos\"]},"                                                          \
  "{\"group\": 0, \"params\": [\"embed.tokens\"]}]},"                          \
  "{\"num_values\": 11, \"params\": [\"embed.tokens\"],"                       \
  " \"buckets\": [{\"group\": 0, \"params\": [\"embed.tokens\"]}]}]"
#else
#error "define one of FAKE_SINGLE, FAKE_PIPE2, FAKE_PIPE2_CROSSED, FAKE_DP2 or \
FAKE_PIPE2_DP2"
#endif

} // namespace

#ifdef FAKE_WORLD_PROGRAMS
const bp_rank_program_t bitpipe_rank_programs[] = {FAKE_RANKS, FAKE_RANKS};
#else
const bp_rank_program_t bitpipe_rank_programs[] = {FAKE_RANKS};
#endif
const int32_t bitpipe_num_ranks =
    sizeof(bitpipe_rank_programs) / sizeof(bitpipe_rank_programs[0]);
#define FAKE_STRINGIFY(x) #x
#define FAKE_VERSION(x) FAKE_STRINGIFY(x)
const char bitpipe_manifest[] = "{\"version\": " FAKE_VERSION(
    BP_MANIFEST_VERSION) "," FAKE_TARGET_JSON FAKE_MODEL_JSON FAKE_PARAMS_JSON
    FAKE_FUNCTIONS_JSON FAKE_TAIL_JSON "}";
const int64_t bitpipe_manifest_size = sizeof(bitpipe_manifest) - 1;
