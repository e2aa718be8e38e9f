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

} // namespace
