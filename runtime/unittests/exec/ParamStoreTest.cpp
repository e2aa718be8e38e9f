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
}

TEST(ExecParamStore, ReplicasInitializeIdentically) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  std::unique_ptr<Backend> cpu = createTargetBackend();
  ParamStore a(*m, 0), b(*m, 3);
  ASSERT_TRUE(a.attach(*cpu).isOk());
  ASSERT_TRUE(b.attach(*cpu).isOk());
  a.initialize(11);
  b.initialize(11);
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
  c.initialize(12);
  EXPECT_NE(c.hostParam(tokens)[0], a.hostParam(tokens)[0]);
}

} // namespace
