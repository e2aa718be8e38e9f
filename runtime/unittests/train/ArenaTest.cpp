//===- ArenaTest.cpp - Arena regions, alignment, exhaustion ---------------===//

#include "core/Arena.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace bitpipe::runtime;

namespace {

std::unique_ptr<Arena> makeArena() {
  Expected<std::unique_ptr<Arena>> a =
      Arena::create({{"params", 1000, RegionLifetime::Persistent},
                     {"activations", 4096, RegionLifetime::PerStep}});
  EXPECT_TRUE(a.isOk()) << a.status().message();
  return a.take();
}

TEST(ArenaTest, AllocationsAreAlignedDisjointAndInsideTheirRegion) {
  std::unique_ptr<Arena> arena = makeArena();
  RegionId params = arena->findRegion("params");
  RegionId acts = arena->findRegion("activations");
  ASSERT_EQ(params, 0);
  ASSERT_EQ(acts, 1);
  EXPECT_EQ(arena->findRegion("nope"), -1);
  EXPECT_EQ(arena->capacity(params), 1024u); // rounded up to 64

  Expected<void *> a = arena->allocate(params, 3, "a");
  Expected<void *> b = arena->allocate(params, 100, "b");
  Expected<void *> c = arena->allocate(acts, 64, "c");
  ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk());
  for (void *p : {*a, *b, *c})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % Arena::kAlignment, 0u);
  // b starts after a's 64-byte slot; the activations follow the 1024
  // parameter bytes.
  EXPECT_EQ(static_cast<char *>(*b) - static_cast<char *>(*a), 64);
  EXPECT_EQ(static_cast<char *>(*c) - static_cast<char *>(*a), 1024);
  EXPECT_EQ(arena->used(params), 64u + 128u);
  // Writing the whole of b must not touch c (would crash sanitizers or
  // corrupt the pattern below).
  std::memset(*c, 0x5a, 64);
  std::memset(*b, 0, 100);
  EXPECT_EQ(static_cast<unsigned char *>(*c)[0], 0x5a);
}

TEST(ArenaTest, ExhaustionNamesRegionTensorAndSizes) {
  std::unique_ptr<Arena> arena = makeArena();
  RegionId acts = arena->findRegion("activations");
  ASSERT_TRUE(arena->allocate(acts, 4000, "h0").isOk());
  Expected<void *> p = arena->allocate(acts, 500, "attn.qkv");
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().code(), ErrorCode::OutOfMemory);
  const std::string &m = p.status().message();
  EXPECT_NE(m.find("'activations'"), std::string::npos) << m;
  EXPECT_NE(m.find("'attn.qkv'"), std::string::npos) << m;
  EXPECT_NE(m.find("asked for 500 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("only 64 of 4096 bytes are left"), std::string::npos) << m;
}

TEST(ArenaTest, ResetStepFreesOnlyPerStepRegions) {
  std::unique_ptr<Arena> arena = makeArena();
  RegionId params = arena->findRegion("params");
  RegionId acts = arena->findRegion("activations");
  Expected<void *> w = arena->allocate(params, 256, "w");
  Expected<void *> x1 = arena->allocate(acts, 4096, "x");
  ASSERT_TRUE(w.isOk() && x1.isOk());
  EXPECT_FALSE(arena->allocate(acts, 1, "y").isOk());
  arena->resetStep();
  EXPECT_EQ(arena->used(acts), 0u);
  EXPECT_EQ(arena->used(params), 256u);
  EXPECT_EQ(arena->peak(acts), 4096u);
  // The next step reuses the same memory for the same plan.
  Expected<void *> x2 = arena->allocate(acts, 4096, "x");
  ASSERT_TRUE(x2.isOk());
  EXPECT_EQ(*x1, *x2);
}

TEST(ArenaTest, TensorsGetTheirShapeAndBytes) {
  std::unique_ptr<Arena> arena = makeArena();
  Expected<TensorView> t =
      arena->allocateTensor(0, "wte", DType::F32, {4, 8});
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(t->numel(), 32);
  EXPECT_EQ(t->bytes(), 128u);
  EXPECT_EQ(arena->used(0), 128u);
  Expected<TensorView> bad =
      arena->allocateTensor(0, "bad", DType::F32, {4, -1});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'bad'"), std::string::npos);
}

TEST(ArenaTest, RejectsDuplicateRegionsAndUnknownIds) {
  Expected<std::unique_ptr<Arena>> dup =
      Arena::create({{"a", 64, RegionLifetime::Persistent},
                     {"a", 64, RegionLifetime::PerStep}});
  ASSERT_FALSE(dup.isOk());
  EXPECT_NE(dup.status().message().find("'a' is declared twice"),
            std::string::npos);
  std::unique_ptr<Arena> arena = makeArena();
  EXPECT_EQ(arena->allocate(7, 8, "t").status().code(),
            ErrorCode::InvalidArgument);
}

} // namespace

namespace {

TEST(ArenaTest, MemoryThatIsNotThereIsAnErrorNotACrash) {
  // 2^62 bytes: each region is legal, the machine does not have them.
  Expected<std::unique_ptr<Arena>> big = Arena::create(
      {{"params", uint64_t(1) << 62, RegionLifetime::Persistent}});
  ASSERT_FALSE(big.isOk());
  EXPECT_EQ(big.status().code(), ErrorCode::OutOfMemory);
  EXPECT_NE(big.status().message().find("arena: cannot reserve "
                                        "4611686018427387904 bytes"),
            std::string::npos)
      << big.status().message();
  // Three regions of 1.5 * 2^62 bytes each add up past 2^64.
  uint64_t huge = (uint64_t(1) << 62) + (uint64_t(1) << 61);
  Expected<std::unique_ptr<Arena>> wrap =
      Arena::create({{"a", huge, RegionLifetime::Persistent},
                     {"b", huge, RegionLifetime::Persistent},
                     {"c", huge, RegionLifetime::PerStep}});
  ASSERT_FALSE(wrap.isOk());
  EXPECT_NE(wrap.status().message().find("arena: the regions up to 'c'"),
            std::string::npos)
      << wrap.status().message();
}

} // namespace
