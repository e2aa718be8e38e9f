//===- GridTextTest.cpp - Printing and parsing the text grid --------------===//

#include "bitpipe/Schedule/GridText.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

TEST(GridText, FormatsOneLinePerRank) {
  RankPrograms ranks = {
      {Action::forward(0, 0), Action::backward(0, 0),
       Action::allReduce({0, 3})},
      {},
      {Action::forward(12, 10), Action::backward(12, 10),
       Action::weightGrad(12, 10)}};
  EXPECT_EQ(formatGrid(ranks), "P0: F0.s0 B0.s0 AR(0,3)\n"
                               "P1:\n"
                               "P2: F12.s10 B12.s10 W12.s10\n");
}

TEST(GridText, RoundTrips) {
  std::string text = "P0: F0.s0 F1.s0 F2.s3 B2.s3 AR(3) B0.s0 AR(0)\n"
                     "P1: F0.s1 W0.s1 AR(1,2,5)\n"
                     "P2:\n";
  Result<RankPrograms> parsed = parseGrid(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0][2], Action::forward(2, 3));
  EXPECT_EQ((*parsed)[1][1], Action::weightGrad(0, 1));
  EXPECT_EQ((*parsed)[1][2], Action::allReduce({1, 2, 5}));
  EXPECT_TRUE((*parsed)[2].empty());
  EXPECT_EQ(formatGrid(*parsed), text);
}

TEST(GridText, SkipsBlankLinesAndToleratesExtraSpaces) {
  Result<RankPrograms> parsed = parseGrid("\n  P0:  F0.s0   B0.s0 \r\n\nP1: F0.s1\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].size(), 2u);
}

TEST(GridText, ParseActionRejectsMalformedTokens) {
  for (const char *bad :
       {"", "X0.s1", "F", "F.s1", "F1s1", "F1.s", "F1.sx", "F1.s2x",
        "F-1.s2", "AR(", "AR()", "AR(1,)", "AR(3,1)", "AR(1,1)", "AR(1)x",
        "AR(1", "AR(a)", "B99999999999.s0"}) {
    Result<Action> a = parseAction(bad);
    EXPECT_FALSE(a.ok()) << "accepted '" << bad << "'";
  }
  Result<Action> ok = parseAction("AR(4,7)");
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(*ok, Action::allReduce({4, 7}));
}

TEST(GridText, ErrorsNameLineAndToken) {
  Result<RankPrograms> r = parseGrid("P0: F0.s0\nP1: F0.s1 B0.s1 Q0.s1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("line 2"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("token 3"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("Q0.s1"), std::string::npos) << r.error;
}

TEST(GridText, RanksMustBeInOrder) {
  Result<RankPrograms> skipped = parseGrid("P0: F0.s0\nP2: F0.s2\n");
  ASSERT_FALSE(skipped.ok());
  EXPECT_NE(skipped.error.find("line 2"), std::string::npos) << skipped.error;
  EXPECT_NE(skipped.error.find("P1"), std::string::npos) << skipped.error;
  EXPECT_FALSE(parseGrid("P0: F0.s0\nP0: F1.s0\n").ok());
  EXPECT_FALSE(parseGrid("Q0: F0.s0\n").ok());
  EXPECT_FALSE(parseGrid("P0 F0.s0\n").ok());
  EXPECT_FALSE(parseGrid("P0x: F0.s0\n").ok());
}

TEST(GridText, MarksSteps) {
  RankPrograms ranks = {
      {Action::forward(0, 0), Action::backward(0, 0)},
      {Action::forward(0, 1), Action::backward(0, 1), Action::allReduce({1})}};
  // Two marks on one rank, one past the end of a list and one on a rank
  // that does not exist (both ignored).
  EXPECT_EQ(formatGrid(ranks, {{1, 0}, {1, 2}, {0, 5}, {3, 0}}),
            "P0: F0.s0 B0.s0\n"
            "P1: >>F0.s1<< B0.s1 >>AR(1)<<\n");
  EXPECT_EQ(formatRank(0, ranks[0], {1}), "P0: F0.s0 >>B0.s0<<");
  // Without marks, the plain grid.
  EXPECT_EQ(formatGrid(ranks, {}), formatGrid(ranks));
}
