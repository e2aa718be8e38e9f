//===- ValueTableTest.cpp - Program values in flight ----------------------===//

#include "ValueTable.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;

namespace {

TEST(ExecValueTable, ValuesAreDefinedOnceAndReadByKind) {
  ValueTable t;
  t.reset(4);
  BufferRef b = Buffer::allocate(16);
  ASSERT_TRUE(b);
  ASSERT_TRUE(t.defineTensor(0, b).isOk());
  Status twice = t.defineTensor(0, b);
  EXPECT_NE(twice.message().find("value 0 is defined twice in one step (it "
                                 "already holds a tensor)"),
            std::string::npos)
      << twice.message();
  EXPECT_NE(t.defineTensor(4, b).message().find("value 4 is out of range"),
            std::string::npos);
  ASSERT_TRUE(t.defineHandle(1, std::make_unique<SavedHandle>()).isOk());
  Expected<BufferRef> wrong = t.tensor(1, "grad0");
  ASSERT_FALSE(wrong.isOk());
  EXPECT_EQ(wrong.status().message(),
            "grad0: value 1 holds a saved handle, not a tensor");
  EXPECT_FALSE(t.handle(2, "the saved handle").isOk());
  ASSERT_TRUE(t.defineToken(2, RequestHandle{7}, 3).isOk());
  Expected<ValueTable::Token> tok = t.token(2, "wait");
  ASSERT_TRUE(tok.isOk());
  EXPECT_EQ(tok->request.id, 7);
  EXPECT_EQ(tok->bucket, 3);
}

TEST(ExecValueTable, BuffersLiveWhileAnyHolderDoes) {
  ValueTable t;
  t.reset(2);
  BufferRef b = Buffer::allocate(8);
  std::weak_ptr<Buffer> watch = b;
  ASSERT_TRUE(t.defineTensor(0, b).isOk());
  ASSERT_TRUE(t.defineTensor(1, b).isOk()); // a local copy shares it
  b.reset();
  t.take(0);
  EXPECT_FALSE(watch.expired()); // value 1 still holds it
  ValueTable::Taken last = t.take(1);
  EXPECT_EQ(last.kind, ValueTable::Kind::Tensor);
  EXPECT_FALSE(watch.expired()); // the caller holds what it took
  last.tensor.reset();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(t.kind(1), ValueTable::Kind::Empty);
}

} // namespace
