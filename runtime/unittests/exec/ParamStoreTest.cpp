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
  EXPECT_EQ(store.bucketRange(0).offset, 0);
  EXPECT_EQ(store.bucketRange(0).count, 16 * 16 + 16 + 8 * 16);
  EXPECT_EQ(store.bucketRange(1).offset, 16 * 16 + 16 + 8 * 16);
  EXPECT_EQ(store.bucketRange(1).count, 32 * 16);
  EXPECT_EQ(store.numFloats(), 32 * 16 + 16 * 16 + 16 + 8 * 16);
  // The gradient views are where the bucket says.
  EXPECT_EQ(store.grad(pos), store.gradsData() + 16 * 16 + 16);
  EXPECT_EQ(store.grad(tokens),
            store.gradsData() + store.bucketRange(1).offset);

  ParamStore last(*m, 1);
  EXPECT_TRUE(last.holds(tokens));
  EXPECT_FALSE(last.holds(w));
  EXPECT_EQ(last.numFloats(), 32 * 16);
}

TEST(ExecParamStore, ReplicasInitializeIdentically) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  ParamStore a(*m, 0), b(*m, 3);
  a.initialize(11);
  b.initialize(11);
  int tokens = m->findParam("embed.tokens");
  for (int64_t i = 0; i < 32 * 16; ++i)
    ASSERT_EQ(a.param(tokens)[i], b.param(tokens)[i]) << i;
  // Zeros for the bias, normal elsewhere.
  int bias = m->findParam("hidden.bias");
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_EQ(a.param(bias)[i], 0.0f);
  EXPECT_NE(a.param(tokens)[0], 0.0f);
  ParamStore c(*m, 0);
  c.initialize(12);
  EXPECT_NE(c.param(tokens)[0], a.param(tokens)[0]);
}

} // namespace
