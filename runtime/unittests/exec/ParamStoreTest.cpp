//===- ParamStoreTest.cpp - Bucket-contiguous parameter layout ------------===//

#include "ParamStore.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::testing;

namespace {

TEST(ExecParamStore, BucketsAreContiguousInManifestOrder) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  ParamStore store(*m, 0);
  int tokens = m->findParam("embed.tokens"), pos = m->findParam("embed.pos"),
      w = m->findParam("hidden.weight"), b = m->findParam("hidden.bias");
  // Bucket 0 = [hidden.weight, hidden.bias, embed.pos], bucket 1 = [tokens].
  EXPECT_EQ(store.layoutOrder(), (std::vector<int>{w, b, pos, tokens}));
  // Each tensor starts on a kParamAlignment boundary; a bucket's range
  // runs from its first tensor's start to its last one's end.
  auto up = [](int64_t x) {
    return (x + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
  };
  const int64_t wAt = 0, bAt = up(16 * 16), posAt = up(bAt + 16),
                tokensAt = up(posAt + 8 * 16);
  EXPECT_EQ(store.bucketRange(0).offset, wAt);
  EXPECT_EQ(store.bucketRange(0).count, posAt + 8 * 16);
  EXPECT_EQ(store.bucketRange(1).offset, tokensAt);
  EXPECT_EQ(store.bucketRange(1).count, 32 * 16);
  EXPECT_EQ(store.numFloats(), tokensAt + 32 * 16);
  // Every array's view of a parameter is where the bucket says.
  EXPECT_EQ(store.offset(b), bAt);
  EXPECT_EQ(store.offset(pos), posAt);
  EXPECT_EQ(store.offset(tokens), store.bucketRange(1).offset);
  // The optimizer's segments in layout order; rank 0 is the lowest holder
  // of every parameter it holds, so it counts them all in the norm.
  ASSERT_EQ(store.layout().all.size(), 4u);
  EXPECT_EQ(store.layout().all[2].name, "embed.pos");
  EXPECT_EQ(store.layout().all[2].offset, posAt);
  EXPECT_EQ(store.layout().all[2].count, 8 * 16);
  EXPECT_FALSE(store.layout().all[2].decay);
  EXPECT_EQ(store.layout().norm.size(), 4u);

  ParamStore last(*m, 1);
  EXPECT_TRUE(last.holds(tokens));
  EXPECT_FALSE(last.holds(w));
  EXPECT_EQ(last.numFloats(), 32 * 16);
  // Rank 0 holds embed.tokens too: rank 1 leaves it out of its norm.
  EXPECT_EQ(last.layout().all.size(), 1u);
  EXPECT_TRUE(last.layout().norm.empty());

  // World rank 2 is pipeline rank 0 of copy 1: rank 0's layout, but rank 0
  // (copy 0) counts every parameter in the norm, so copy 1 counts none.
  ParamStore copy1(*m, 2);
  EXPECT_EQ(copy1.layoutOrder(), store.layoutOrder());
  EXPECT_EQ(copy1.bucketRange(0).count, store.bucketRange(0).count);
  EXPECT_EQ(copy1.layout().all.size(), 4u);
  EXPECT_TRUE(copy1.layout().norm.empty());
}

/// threeCopiesManifest, parsed.
Manifest threeCopies(const char *gradientSync) {
  Expected<Manifest> m = parseManifest(threeCopiesManifest(gradientSync));
  EXPECT_TRUE(m.isOk()) << m.status().message();
  return std::move(*m);
}

TEST(ExecParamStore, ShardedBucketsArePaddedToTheirShards) {
  Manifest m = threeCopies("flat");
  ParamStore whole(m, 0);
  EXPECT_FALSE(whole.shardsOptimizer());
  EXPECT_EQ(whole.bucketRange(0).count, 512);
  ParamStore store(m, 0, /*shardOptimizer=*/true);
  ASSERT_TRUE(store.shardsOptimizer());
  // 512 -> 513 (3 shards of 171) and 512 -> 516 (6 of 86); the next
  // bucket still starts aligned.
  EXPECT_EQ(store.bucketRange(0).offset, 0);
  EXPECT_EQ(store.bucketRange(0).count, 513);
  EXPECT_EQ(store.bucketRange(1).offset, 640);
  EXPECT_EQ(store.bucketRange(1).count, 516);
  EXPECT_EQ(store.numFloats(), 640 + 516);
  // The tensors stay where the unsharded layout has them.
  for (int p : whole.layoutOrder())
    EXPECT_EQ(store.offset(p),
              p == m.findParam("embed.tokens") ? 640 : whole.offset(p));
}

TEST(ExecParamStore, ARankHoldsTheOptimizerStateOfItsShards) {
  Manifest m = threeCopies("flat");
  const int b = m.findParam("hidden.bias"), pos = m.findParam("embed.pos");
  // Copy 0 holds [0, 171) of bucket 0 (hidden.weight's first 171) and
  // [0, 86) of bucket 1 (embed.tokens'), compactly.
  ParamStore first(m, 0, true);
  EXPECT_EQ(first.bucketShard(0).offset, 0);
  EXPECT_EQ(first.bucketShard(0).count, 171);
  EXPECT_EQ(first.bucketShard(1).offset, 640);
  EXPECT_EQ(first.bucketShard(1).count, 86);
  const ParamLayout &l = first.layout();
  ASSERT_EQ(l.owned.size(), 2u);
  EXPECT_EQ(l.all[l.owned[0].segment].name, "hidden.weight");
  EXPECT_EQ(l.owned[0].offset, 0);
  EXPECT_EQ(l.owned[0].count, 171);
  EXPECT_EQ(l.owned[0].moment, 0);
  EXPECT_EQ(l.all[l.owned[1].segment].name, "embed.tokens");
  EXPECT_EQ(l.owned[1].offset, 640);
  EXPECT_EQ(l.owned[1].count, 86);
  EXPECT_EQ(l.owned[1].moment, 171);
  EXPECT_EQ(l.numMoments, 171 + 86);
  // The norm counts exactly the owned elements.
  ASSERT_EQ(l.norm.size(), 2u);
  EXPECT_EQ(l.norm[0].count, 171);
  EXPECT_EQ(l.norm[1].count, 86);

  // Pipeline rank 0 of copy 1 (world rank 2): [171, 342) of bucket 0, the
  // rest of hidden.weight and all of hidden.bias (the gap after it is
  // nobody's parameter).
  ParamStore second(m, 2, true);
  const ParamLayout &l2 = second.layout();
  ASSERT_EQ(l2.owned.size(), 3u);
  EXPECT_EQ(l2.owned[0].offset, 171);
  EXPECT_EQ(l2.owned[0].count, 256 - 171);
  EXPECT_EQ(l2.owned[1].offset, second.offset(b));
  EXPECT_EQ(l2.owned[1].count, 16);
  EXPECT_EQ(l2.owned[1].moment, 256 - 171);
  // Copy 2: [342, 513), embed.pos whole.
  ParamStore third(m, 4, true);
  ASSERT_GE(third.layout().owned.size(), 1u);
  EXPECT_EQ(third.layout().owned[0].offset, third.offset(pos));
  EXPECT_EQ(third.layout().owned[0].count, 8 * 16);

  // Every element of a bucket is some rank's, once: the shards of bucket
  // 1 over the six ranks tile its range.
  int64_t next = 640;
  for (int rank : {0, 1, 2, 3, 4, 5}) {
    ParamStore s(m, rank, true);
    const int bucket = m.pipelineRank(rank) == 0 ? 1 : 0;
    EXPECT_EQ(s.bucketShard(bucket).offset - s.bucketRange(bucket).offset,
              next - 640)
        << rank;
    next += s.bucketShard(bucket).count;
  }
  EXPECT_EQ(next, 640 + 516);
}

TEST(ExecParamStore, TwoLevelShardsFollowTheReduceScatters) {
  // Group 0 in two levels: member i of copy c holds shard i * 3 + c.
  Manifest m = threeCopies("hierarchical");
  ParamStore member1copy0(m, 1, true), member0copy1(m, 2, true);
  EXPECT_EQ(member1copy0.bucketShard(0).offset, 3 * 86);
  EXPECT_EQ(member0copy1.bucketShard(1).offset, 640 + 86);
}

TEST(ExecParamStore, ReplicasInitializeIdentically) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore a(*m, 0), b(*m, 3);
  ASSERT_TRUE(a.attach(*cpu).isOk());
  ASSERT_TRUE(b.attach(*cpu).isOk());
  ASSERT_TRUE(a.initialize(11).isOk());
  ASSERT_TRUE(b.initialize(11).isOk());
  int tokens = m->findParam("embed.tokens");
  for (int64_t i = 0; i < 32 * 16; ++i)
    ASSERT_EQ(a.hostParam(tokens)[i], b.hostParam(tokens)[i]) << i;
  // Zeros for the bias, normal elsewhere.
  int bias = m->findParam("hidden.bias");
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_EQ(a.hostParam(bias)[i], 0.0f);
  EXPECT_NE(a.hostParam(tokens)[0], 0.0f);
  ParamStore c(*m, 0);
  ASSERT_TRUE(c.attach(*cpu).isOk());
  ASSERT_TRUE(c.initialize(12).isOk());
  EXPECT_NE(c.hostParam(tokens)[0], a.hostParam(tokens)[0]);
}

// The stage functions add into the accumulators the manifest's target
// lays out: a backend whose accumulators differ (the CPU's float64 under a
// cuda program, whose functions add fp32) is refused when the store is
// attached, not found as wrong sums.
TEST(ExecParamStore, AccumulatorsOfAnotherTypeThanTheTargetsAreAnError) {
  std::string text =
      replaced(pipeDpManifest(), "\"name\": \"cpu\"", "\"name\": \"cuda\"");
  for (size_t at; (at = text.find("\"f64\"")) != std::string::npos;)
    text.replace(at, 5, "\"f32\"");
  Expected<Manifest> m = parseManifest(text);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore store(*m, 0);
  Status s = store.attach(*cpu);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the backend's gradient accumulators are f64, "
                             "but the stage functions of a cuda program add "
                             "into f32 ones"),
            std::string::npos)
      << s.message();
}

} // namespace

namespace {

/// The fake manifest with hidden.bias of \p shape (every mention of it).
std::string withBiasShape(const std::string &shape) {
  std::string text = pipeDpManifest();
  for (const char *key : {"\"name\": \"hidden.bias\", \"shape\": ",
                          "\"param\": \"hidden.bias\", \"shape\": "}) {
    std::string from = std::string(key) + "[16]", to = key + shape;
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  }
  return text;
}

// A model whose parameters cannot be allocated is an error that says what
// and how much, not std::bad_alloc (which -fno-exceptions turns into an
// abort).
TEST(ExecParamStore, ArraysThatCannotBeAllocatedAreAnError) {
  // 2^42 elements: 16 TiB of fp32 weights, 32 TiB of gradients.
  Expected<Manifest> m = parseManifest(withBiasShape("[4398046511104]"));
  ASSERT_TRUE(m.isOk()) << m.status().message();
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore store(*m, 0);
  Status s = store.attach(*cpu);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), ErrorCode::OutOfMemory);
  EXPECT_NE(s.message().find("the parameter store cannot allocate its "),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(" bytes, "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(" GiB) of host memory for 4 parameter tensors"),
            std::string::npos)
      << s.message();
}

TEST(ExecParamStore, LayoutPastSixtyFourBitOffsetsIsAnError) {
  // 2^61 elements: numElements fits int64, 8-byte gradients do not.
  Expected<Manifest> m = parseManifest(withBiasShape("[2305843009213693952]"));
  ASSERT_TRUE(m.isOk()) << m.status().message();
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore store(*m, 0);
  Status s = store.attach(*cpu);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the parameter store of rank 0 cannot be laid "
                             "out: with parameter 'hidden.bias' "
                             "(2305843009213693952 elements) its arrays "
                             "exceed"),
            std::string::npos)
      << s.message();
}

TEST(ExecParamStore, AShardedStoreKeepsItsMomentsCompactly) {
  Manifest m = threeCopies("flat");
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore whole(m, 2), sharded(m, 2, true);
  ASSERT_TRUE(whole.attach(*cpu).isOk());
  ASSERT_TRUE(sharded.attach(*cpu).isOk());
  // fp32 weights and fp64 accumulators whole, the two fp32 moments of the
  // owned elements only.
  EXPECT_EQ(whole.targetBytes(), whole.numFloats() * (4 + 8 + 8));
  EXPECT_EQ(sharded.targetBytes(),
            sharded.numFloats() * (4 + 8) + sharded.layout().numMoments * 8);
  EXPECT_LT(sharded.targetBytes(), whole.targetBytes());
  ASSERT_TRUE(sharded.initialize(3).isOk());
  ASSERT_TRUE(sharded.shardsOptimizer());
}

TEST(ExecParamStore, AShardedStoresHostImageHoldsTheWholeMoments) {
  // World rank 2 owns hidden.weight's elements [171, 256) and hidden.bias.
  Manifest m = threeCopies("flat");
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore store(m, 2, true);
  ASSERT_TRUE(store.attach(*cpu).isOk());
  ASSERT_TRUE(store.initialize(3).isOk());
  const int w = m.findParam("hidden.weight"), b = m.findParam("hidden.bias");
  // A checkpoint's load writes the whole image; the target keeps the owned
  // parts, and a later image has them where they were, zero elsewhere (no
  // peer to gather from here).
  ASSERT_TRUE(store.toHost().isOk());
  for (int64_t i = 0; i < 256; ++i)
    store.hostM(w)[i] = static_cast<float>(i);
  store.hostV(b)[3] = 7.0f;
  ASSERT_TRUE(store.toTarget().isOk());
  store.releaseHost();
  ASSERT_TRUE(store.toHost().isOk());
  EXPECT_EQ(store.hostM(w)[170], 0.0f);
  EXPECT_EQ(store.hostM(w)[171], 171.0f);
  EXPECT_EQ(store.hostM(w)[255], 255.0f);
  EXPECT_EQ(store.hostV(b)[3], 7.0f);
  // A bad moment is reported at its index in the parameter.
  store.hostV(w)[200] = -1.0f;
  ASSERT_TRUE(store.toTarget().isOk());
  Expected<std::pair<int, Status>> bad = store.firstInvalidParam();
  ASSERT_TRUE(bad.isOk());
  EXPECT_EQ(bad->first, w);
  EXPECT_NE(bad->second.message().find("optim.v.hidden.weight' element 200"),
            std::string::npos)
      << bad->second.message();
}

} // namespace
