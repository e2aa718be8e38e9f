//===- PendingOpsTest.cpp - How a pending operation reads -----------------===//
//
// The words both transports use for an operation that a timeout or a
// failure names (comm/PendingOps.h), and the table of started operations
// they keep by request handle.
//
//===----------------------------------------------------------------------===//

#include "comm/PendingOps.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;

namespace {

const std::vector<int> kNoRanks;

PendingOp transfer(const char *op, int peer, int tag, int64_t count,
                   DType dtype) {
  PendingOp p;
  p.op = op;
  p.peer = peer;
  p.tag = tag;
  p.count = count;
  p.dtype = dtype;
  return p;
}

TEST(CommPendingOps, ATransferNamesItsPeerTagAndSize) {
  EXPECT_EQ(describePendingOp(transfer("recv", 1, 4, 16, DType::F32), kNoRanks),
            "recv with rank 1 (tag 4, 16 x f32)");
  EXPECT_EQ(describePendingOp(transfer("send", 3, 0, 0, DType::BF16), kNoRanks),
            "send with rank 3 (tag 0, 0 x bf16)");
  // A negative tag is still a tag.
  EXPECT_EQ(describePendingOp(transfer("send", 2, -1, 8, DType::I64), kNoRanks),
            "send with rank 2 (tag -1, 8 x i64)");
}

TEST(CommPendingOps, AWarmUpWithOnePeerHasNoTag) {
  PendingOp warm;
  warm.op = "warm-up recv";
  warm.peer = 0;
  warm.count = 1;
  warm.dtype = DType::I32;
  EXPECT_EQ(describePendingOp(warm, kNoRanks),
            "warm-up recv with rank 0 (1 x i32)");
}

TEST(CommPendingOps, ANamedReaderFollows) {
  PendingOp p = transfer("recv", 1, 21, 4, DType::F32);
  p.reader = "step 1: forward F0.s1 (stage1)";
  EXPECT_EQ(describePendingOp(p, kNoRanks),
            "recv with rank 1 (tag 21, 4 x f32), read by step 1: forward "
            "F0.s1 (stage1)");
}

TEST(CommPendingOps, ACollectiveNamesItsGroupAndRanks) {
  PendingOp p;
  p.op = "allreduce";
  p.group = 2;
  p.count = 64;
  p.dtype = DType::F64;
  EXPECT_EQ(describePendingOp(p, {0, 2}),
            "allreduce over group 2 (ranks 0,2, 64 x f64)");
  p.reader = "the optimizer step";
  EXPECT_EQ(describePendingOp(p, {0, 2}),
            "allreduce over group 2 (ranks 0,2, 64 x f64), read by the "
            "optimizer step");

  PendingOp barrier;
  barrier.op = "barrier";
  barrier.group = kWorldGroup;
  EXPECT_EQ(describePendingOp(barrier, {0, 1, 2, 3}),
            "barrier over group 0 (ranks 0,1,2,3, 0 x f32)");
}

TEST(CommPendingOps, ATwoLevelSumNamesItsStepBeforeItsReader) {
  PendingOp p;
  p.op = "hierarchical allreduce";
  p.group = 1;
  p.count = 9;
  p.dtype = DType::F32;
  p.step = describeTwoLevelStep(TwoLevelStep::AllReduceAcross, 3, {1, 3}, 4,
                                DType::F32);
  p.reader = "the optimizer step";
  EXPECT_EQ(describePendingOp(p, {0, 1, 2, 3}),
            "hierarchical allreduce over group 1 (ranks 0,1,2,3, 9 x f32), "
            "step 2 of 3: allreduce across copies over group 3 (ranks 1,3, 4 "
            "x f32), read by the optimizer step");
  EXPECT_EQ(describeTwoLevelStep(TwoLevelStep::ReduceScatter, 2, {0, 1}, 8,
                                 DType::F64),
            "step 1 of 3: reduce-scatter within the copy over group 2 (ranks "
            "0,1, 8 x f64)");
  EXPECT_EQ(
      describeTwoLevelStep(TwoLevelStep::AllGather, 2, {2, 3}, 8, DType::F32),
      "step 3 of 3: allgather within the copy over group 2 (ranks 2,3, "
      "8 x f32)");
  EXPECT_EQ(
      describeTwoLevelStep(TwoLevelStep::Tail, 1, {0, 1, 2, 3}, 1, DType::F32),
      "the tail: allreduce over group 1 (ranks 0,1,2,3, 1 x f32)");
}

TEST(CommPendingOps, AnOperationWithNeitherPeerNorGroupIsItsName) {
  PendingOp warm;
  warm.op = "warm-up of the channels (from rank 0, to rank 2)";
  warm.count = 1;
  warm.dtype = DType::I32;
  // The ranks are not read: the name lists the peers.
  EXPECT_EQ(describePendingOp(warm, {5, 6}),
            "warm-up of the channels (from rank 0, to rank 2) (1 x i32)");
}

TEST(CommPendingOps, AnUnknownRequestNamesTheRankTheUseAndTheId) {
  Status s = unknownRequest(3, "wait on", RequestHandle{12});
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "rank 3: wait on unknown or already completed request 12");
  EXPECT_EQ(unknownRequest(0, "test of", RequestHandle{-1}).message(),
            "rank 0: test of unknown or already completed request -1");
}

struct Tracked : PendingOp {
  int event = -1;
};

TEST(CommPendingOps, TheTableHandsOutIdsOnceAndForgetsErasedOnes) {
  PendingOps<Tracked> table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(RequestHandle{0}), nullptr);

  Tracked a;
  a.op = "send";
  a.event = 7;
  RequestHandle ha = table.add(a);
  Tracked b;
  b.op = "recv";
  RequestHandle hb = table.add(b);
  EXPECT_EQ(ha.id, 0);
  EXPECT_EQ(hb.id, 1);
  EXPECT_EQ(table.size(), 2u);
  ASSERT_NE(table.find(ha), nullptr);
  EXPECT_EQ(table.find(ha)->op, "send");
  EXPECT_EQ(table.find(ha)->event, 7);
  table.find(hb)->event = 9;
  EXPECT_EQ(table.find(hb)->event, 9);

  table.erase(ha);
  EXPECT_EQ(table.find(ha), nullptr);
  EXPECT_EQ(table.size(), 1u);
  table.erase(ha); // erasing twice is harmless
  EXPECT_EQ(table.size(), 1u);
  // An erased id is not handed out again.
  EXPECT_EQ(table.add(a).id, 2);
  table.erase(hb);
  table.erase(RequestHandle{2});
  EXPECT_TRUE(table.empty());
}

} // namespace
