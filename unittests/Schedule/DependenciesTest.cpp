//===- DependenciesTest.cpp - The data dependencies of a step -------------===//

#include "bitpipe/Schedule/Dependencies.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

TEST(Dependencies, ForwardNeedsThePreviousStage) {
  ActionInputs first = inputsOf(Action::forward(3, 0), 4);
  EXPECT_FALSE(first.sameStage);
  EXPECT_FALSE(first.crossStage);
  ActionInputs mid = inputsOf(Action::forward(3, 2), 4);
  EXPECT_FALSE(mid.sameStage);
  ASSERT_TRUE(mid.crossStage);
  EXPECT_EQ(*mid.crossStage, Action::forward(3, 1));
}

TEST(Dependencies, BackwardNeedsItsForwardAndTheNextStage) {
  ActionInputs last = inputsOf(Action::backward(2, 3), 4);
  ASSERT_TRUE(last.sameStage);
  EXPECT_EQ(*last.sameStage, Action::forward(2, 3));
  EXPECT_FALSE(last.crossStage);
  ActionInputs mid = inputsOf(Action::backward(2, 1), 4);
  ASSERT_TRUE(mid.sameStage);
  EXPECT_EQ(*mid.sameStage, Action::forward(2, 1));
  ASSERT_TRUE(mid.crossStage);
  EXPECT_EQ(*mid.crossStage, Action::backward(2, 2));
}

TEST(Dependencies, WeightGradientNeedsItsBackwardOnly) {
  ActionInputs w = inputsOf(Action::weightGrad(5, 0), 4);
  ASSERT_TRUE(w.sameStage);
  EXPECT_EQ(*w.sameStage, Action::backward(5, 0));
  EXPECT_FALSE(w.crossStage);
}

TEST(Dependencies, AllReduceHasNoInputsButFollowsGradients) {
  ActionInputs ar = inputsOf(Action::allReduce({0, 3}), 4);
  EXPECT_FALSE(ar.sameStage);
  EXPECT_FALSE(ar.crossStage);
  EXPECT_TRUE(producesGradients(Action::backward(0, 0)));
  EXPECT_TRUE(producesGradients(Action::weightGrad(0, 0)));
  EXPECT_FALSE(producesGradients(Action::forward(0, 0)));
  EXPECT_FALSE(producesGradients(Action::allReduce({0})));
}
