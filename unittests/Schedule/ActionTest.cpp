//===- ActionTest.cpp - Action spelling and replica groups ----------------===//

#include "bitpipe/Schedule/Schedule.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

TEST(Action, SpellsLikeTheGrid) {
  EXPECT_EQ(Action::forward(3, 1).str(), "F3.s1");
  EXPECT_EQ(Action::backward(0, 7).str(), "B0.s7");
  EXPECT_EQ(Action::weightGrad(2, 4).str(), "W2.s4");
  EXPECT_EQ(Action::allReduce({4, 7}).str(), "AR(4,7)");
}

TEST(Placement, ReplicaGroupsOfMirroredPipelines) {
  Placement p;
  p.numDevices = 2;
  p.numStages = 2;
  p.pipelines = {Pipeline{{0, 1}}, Pipeline{{1, 0}}};
  std::vector<std::vector<int>> expected = {{0, 1}, {0, 1}};
  EXPECT_EQ(p.replicaGroups(), expected);
}
