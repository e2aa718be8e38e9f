//===- CommsTest.cpp - Transfers derived from schedules -------------------===//

#include "bitpipe/Schedule/Comms.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

int countKind(const CommProgram &p, CommKind kind) {
  int n = 0;
  for (const std::vector<CommAction> &rank : p.ranks)
    for (const CommAction &c : rank)
      n += c.kind == kind;
  return n;
}

} // namespace

TEST(Comms, OneFOneBTwoRanksPlacesSendsAfterAndReceivesBefore) {
  Result<CommProgram> p = lowerComms(oneFOneB(2, 2));
  ASSERT_TRUE(p) << p.error;
  EXPECT_EQ(p.value->format(),
            "P0: F0.s0 SEND_F0.s0->P1 F1.s0 SEND_F1.s0->P1 RECV_B0.s1<-P1 "
            "B0.s0 RECV_B1.s1<-P1 B1.s0\n"
            "P1: RECV_F0.s0<-P0 F0.s1 B0.s1 SEND_B0.s1->P0 RECV_F1.s0<-P0 "
            "F1.s1 B1.s1 SEND_B1.s1->P0\n");
  EXPECT_TRUE(checkChannels(*p.value).empty());
}

TEST(Comms, TransfersOfOneFOneB) {
  const int d = 4, n = 3;
  Result<CommProgram> p = lowerComms(oneFOneB(d, n));
  ASSERT_TRUE(p) << p.error;
  // (D-1) boundaries, each crossed once forward and once backward per mb.
  EXPECT_EQ(p.value->transfers.size(), size_t(2 * (d - 1) * n));
  EXPECT_EQ(countKind(*p.value, CommKind::SendF), (d - 1) * n);
  EXPECT_EQ(countKind(*p.value, CommKind::RecvF), (d - 1) * n);
  EXPECT_EQ(countKind(*p.value, CommKind::SendB), (d - 1) * n);
  EXPECT_EQ(countKind(*p.value, CommKind::RecvB), (d - 1) * n);
  EXPECT_EQ(countKind(*p.value, CommKind::LocalCopyF), 0);
  for (const Transfer &t : p.value->transfers) {
    EXPECT_FALSE(t.local());
    EXPECT_EQ(t.dst, t.toStage);
    EXPECT_EQ(t.src, t.fromStage);
  }
}

TEST(Comms, BitPipeBottomOfTheVIsALocalCopy) {
  Schedule s = bitpipeD4N4();
  Result<CommProgram> p = lowerComms(s);
  ASSERT_TRUE(p) << p.error;
  // 7 boundaries x 2 directions x 4 micro-batches; the s3->s4 boundary of
  // every micro-batch stays on one device (both ways).
  EXPECT_EQ(p.value->transfers.size(), 56u);
  int local = 0;
  for (const Transfer &t : p.value->transfers) {
    if (!t.local())
      continue;
    ++local;
    EXPECT_EQ(std::min(t.fromStage, t.toStage), 3);
    EXPECT_EQ(std::max(t.fromStage, t.toStage), 4);
    // Down (mb 0,1) turns on device 3, up (mb 2,3) on device 0.
    EXPECT_EQ(t.src, t.microbatch < 2 ? 3 : 0);
  }
  EXPECT_EQ(local, 8);
  EXPECT_EQ(countKind(*p.value, CommKind::LocalCopyF), 4);
  EXPECT_EQ(countKind(*p.value, CommKind::LocalCopyB), 4);
  // Rank 0's copy comes right after the F of stage 3 of micro-batch 2.
  const std::vector<CommAction> &r0 = p.value->ranks[0];
  ASSERT_GE(r0.size(), 9u);
  EXPECT_EQ(r0[1].str(), "SEND_F0.s0->P1");
  EXPECT_EQ(r0[4].str(), "RECV_F2.s2<-P1");
  EXPECT_EQ(r0[5].str(), "F2.s3");
  EXPECT_EQ(r0[6].str(), "COPY_F2.s3");
  EXPECT_EQ(r0[7].str(), "F2.s4");
  EXPECT_EQ(r0[8].str(), "SEND_F2.s4->P1");
  // The reference order pairs every channel in order.
  EXPECT_TRUE(checkChannels(*p.value).empty());
}

// A simulated trace's spans are named by CommAction::str(); the
// calibration tells them from names no bitpipe trace writes.
TEST(Comms, EveryActionNameIsRecognized) {
  Schedule s = bitpipeD4N4();
  Result<CommProgram> p = lowerComms(s);
  ASSERT_TRUE(p) << p.error;
  for (const std::vector<CommAction> &rank : p.value->ranks)
    for (const CommAction &action : rank)
      EXPECT_TRUE(isCommActionName(action.str())) << action.str();
  EXPECT_TRUE(isCommActionName("AR(0,7)"));
  for (const char *name :
       {"SEND_F2.s4", "SEND_F2.s4->P", "RECV_B1.s2->P1", "COPY_F2.s3->P1",
        "SEND_F2.s4->P1x", "F2.s4 ", "fwd0.s0", ""})
    EXPECT_FALSE(isCommActionName(name)) << name;
}

TEST(Comms, ChannelOrderMismatchIsFound) {
  // Rank 1 takes micro-batch 1 first while rank 0 sends micro-batch 0 first.
  Schedule s = emptySchedule("swapped", loop(2), 2);
  s.ranks[0] = gridRanks("P0: F0.s0 F1.s0 B0.s0 B1.s0")[0];
  s.ranks[1] = gridRanks("P0: F1.s1 B1.s1 F0.s1 B0.s1")[0];
  Result<CommProgram> p = lowerComms(s);
  ASSERT_TRUE(p) << p.error;
  std::vector<ChannelMismatch> mm = checkChannels(*p.value);
  ASSERT_EQ(mm.size(), 2u); // 0->1 activations and 1->0 gradients.
  EXPECT_EQ(mm[0].src, 0);
  EXPECT_EQ(mm[0].dst, 1);
  EXPECT_EQ(mm[0].position, 0);
  EXPECT_EQ(p.value->transfers[mm[0].sendTransfer].microbatch, 0);
  EXPECT_EQ(p.value->transfers[mm[0].recvTransfer].microbatch, 1);
  EXPECT_EQ(p.value->ranks[1][mm[0].recvItem].str(), "RECV_F1.s0<-P0");
  EXPECT_EQ(mm[1].src, 1);
  EXPECT_EQ(mm[1].dst, 0);
}

TEST(Comms, EditedProgramWithoutAReceiveIsFound) {
  Result<CommProgram> p = lowerComms(oneFOneB(2, 2));
  ASSERT_TRUE(p) << p.error;
  std::vector<CommAction> &r1 = p.value->ranks[1];
  ASSERT_EQ(r1[4].kind, CommKind::RecvF);
  r1.erase(r1.begin() + 4); // Drop RECV_F1.s0<-P0.
  std::vector<ChannelMismatch> mm = checkChannels(*p.value);
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0].position, 1);
  EXPECT_EQ(mm[0].recvTransfer, -1);
  EXPECT_EQ(p.value->transfers[mm[0].sendTransfer].microbatch, 1);
}

TEST(Comms, RefusesWhatCannotBeLowered) {
  Schedule dup = oneFOneB(2, 2);
  dup.ranks[0].push_back(Action::forward(0, 0));
  Result<CommProgram> p = lowerComms(dup);
  EXPECT_FALSE(p);
  EXPECT_NE(p.error.find("forward of stage 0 for micro-batch 0 runs twice"),
            std::string::npos)
      << p.error;

  Schedule orphan = oneFOneB(2, 2);
  orphan.ranks[1].erase(orphan.ranks[1].begin()); // F0.s1 gone, B0.s1 stays.
  p = lowerComms(orphan);
  EXPECT_FALSE(p);
  EXPECT_NE(p.error.find("rank 1: backward of stage 1 for micro-batch 0 needs "
                         "the forward of stage 1 for micro-batch 0, which no "
                         "rank runs"),
            std::string::npos)
      << p.error;

  Schedule range = oneFOneB(2, 2);
  range.ranks[0].push_back(Action::forward(7, 0));
  p = lowerComms(range);
  EXPECT_FALSE(p);
  EXPECT_NE(p.error.find("F7.s0 is out of range"), std::string::npos)
      << p.error;
}
