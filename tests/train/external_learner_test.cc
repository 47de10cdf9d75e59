// The hand-over between a training loop on another thread and the node's round: the vector in,
// the mix back, the answers for a Byzantine round and a stopped node, and bad input.
#include "train/external_learner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/error.h"

namespace phalanx::train {
namespace {

using namespace std::chrono_literals;
using Answer = ExternalLearner::Answer;

TEST(ExternalLearner, HandsTheVectorInAndTheMixBack) {
  ExternalLearner learner(3);
  int woken = 0;
  EXPECT_FALSE(learner.ready([&] { ++woken; }));  // nothing handed in: the round waits
  std::vector<float> v{1, 2, 3};
  EXPECT_EQ(learner.submit(v, 0.5), Answer::kPending);
  EXPECT_EQ(woken, 1);  // the waiting round is resumed
  EXPECT_TRUE(learner.ready([&] { ++woken; }));
  EXPECT_DOUBLE_EQ(learner.step(0), 0.5);
  EXPECT_EQ(std::vector<float>(learner.parameters().begin(), learner.parameters().end()), v);
  EXPECT_EQ(learner.await(0ms), Answer::kPending);  // not mixed yet
  for (float& x : learner.parameters()) x *= 10;    // the node's mix
  learner.roundDone(0, false);
  EXPECT_EQ(learner.await(0ms), Answer::kMixed);
  EXPECT_EQ(v, (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(learner.roundsMixed(), 1u);
  EXPECT_FALSE(learner.ready([] {}));  // the next round waits for the next vector
}

TEST(ExternalLearner, GradientExchangeReturnsTheAggregate) {
  ExternalLearner learner(2);
  std::vector<float> g{4, 8};
  learner.submit(g, std::nan(""));
  ASSERT_TRUE(learner.ready([] {}));
  EXPECT_TRUE(std::isnan(learner.gradient(0)));
  EXPECT_EQ(std::vector<float>(learner.lastGradient().begin(), learner.lastGradient().end()), g);
  const std::vector<float> aggregate{1, -1};
  learner.applyAggregate(0, aggregate);
  learner.roundDone(0, false);
  EXPECT_EQ(learner.await(0ms), Answer::kMixed);
  EXPECT_EQ(g, aggregate);
}

TEST(ExternalLearner, AWithdrawnVectorIsTheNodesCopyAndTheLoopsBufferIsLeftAlone) {
  ExternalLearner learner(2);
  std::vector<float> v{1, 2};
  learner.submit(v, 0.25);
  learner.withdraw();  // the loop's wait ended by an exception: its buffer is its own again
  v = {7, 7};
  ASSERT_TRUE(learner.ready([] {}));
  EXPECT_DOUBLE_EQ(learner.step(0), 0.25);
  EXPECT_EQ(std::vector<float>(learner.parameters().begin(), learner.parameters().end()),
            (std::vector<float>{1, 2}));  // what was handed in, not what the loop wrote since
  for (float& x : learner.parameters()) x = 3;
  learner.roundDone(0, false);
  EXPECT_EQ(learner.await(0ms), Answer::kMixed);
  EXPECT_EQ(v, (std::vector<float>{7, 7}));           // the mix went nowhere the loop sees
  EXPECT_EQ(learner.submit(v, 0), Answer::kPending);  // and the next vector is taken
  // Withdrawn after the node took it: the round goes on with the node's copy, the loop's buffer
  // is left alone.
  ASSERT_TRUE(learner.ready([] {}));
  learner.step(1);
  learner.withdraw();
  v = {5, 5};
  for (float& x : learner.parameters()) x = 4;
  learner.roundDone(1, false);
  EXPECT_EQ(learner.await(0ms), Answer::kMixed);
  EXPECT_EQ(v, (std::vector<float>{5, 5}));
}

TEST(ExternalLearner, AByzantineRoundPassesTheVectorBackUntouched) {
  ExternalLearner learner(2);
  std::vector<float> v{1, 2};
  learner.submit(v, 0);
  learner.roundDone(4, false);  // an attacker's round: it never takes the loop's vector
  EXPECT_EQ(learner.await(0ms), Answer::kPassed);
  EXPECT_EQ(v, (std::vector<float>{1, 2}));
  EXPECT_EQ(learner.roundsMixed(), 0u);
}

TEST(ExternalLearner, AStoppedNodeAnswersTheWaitingLoop) {
  ExternalLearner learner(2);
  std::vector<float> v{1, 2};
  learner.submit(v, 0);
  std::thread node([&] {
    std::this_thread::sleep_for(20ms);  // the loop is already waiting
    learner.finished();
  });
  Answer a = Answer::kPending;
  while (a == Answer::kPending) a = learner.await(10ms);
  node.join();
  EXPECT_EQ(a, Answer::kFinished);
  EXPECT_EQ(v, (std::vector<float>{1, 2}));
  EXPECT_TRUE(learner.stopped());
  EXPECT_EQ(learner.submit(v, 0), Answer::kFinished);  // nothing more is taken
  EXPECT_FALSE(learner.ready([] { FAIL() << "a stopped learner wakes nobody"; }));
}

TEST(ExternalLearner, RefusesAWrongLengthASecondVectorInFlightAndBadLayers) {
  ExternalLearner learner(3, {{1, 2}, {1, 1}});
  EXPECT_EQ(learner.layers().size(), 2u);
  std::vector<float> short_vector{1, 2};
  EXPECT_THROW(learner.submit(short_vector, 0), std::invalid_argument);
  std::vector<float> v{1, 2, 3};
  learner.submit(v, 0);
  EXPECT_THROW(learner.submit(v, 0), std::invalid_argument);
  EXPECT_THROW(ExternalLearner(0), base::ConfigError);
  EXPECT_THROW(ExternalLearner(3, {{2, 2}}), base::ConfigError);
}

TEST(ExternalLearner, AnEvaluationRoundWaitsForTheLoopsReport) {
  ExternalLearner learner(1);
  std::vector<float> v{1};
  learner.submit(v, 0);
  ASSERT_TRUE(learner.ready([] {}));
  learner.step(0);
  learner.roundDone(0, /*evaluation_due=*/true);
  EXPECT_TRUE(learner.evaluationDue());
  int woken = 0;
  EXPECT_FALSE(learner.evaluated([&] { ++woken; }));  // the node holds the round's record
  EXPECT_EQ(learner.await(0ms), Answer::kMixed);
  EXPECT_EQ(woken, 0);
  learner.report({.loss = 0.1, .accuracy = 0.9});  // the loop evaluated the mix
  EXPECT_EQ(woken, 1);
  EXPECT_TRUE(learner.evaluated([] { FAIL() << "nothing is owed"; }));
  ASSERT_TRUE(learner.evaluation(nullptr, true));
  learner.submit(v, 0);
  learner.step(1);
  learner.roundDone(1, true);
  EXPECT_FALSE(learner.evaluated([&] { ++woken; }));
  EXPECT_EQ(learner.await(0ms), Answer::kMixed);
  learner.submit(v, 0);  // the loop goes on without reporting: the record stops waiting
  EXPECT_EQ(woken, 2);
  EXPECT_TRUE(learner.evaluated([] {}));
  learner.step(2);
  learner.roundDone(2, true);
  EXPECT_FALSE(learner.evaluated([&] { ++woken; }));
  learner.finished();  // a stop owes nothing and wakes nobody: the node is finishing itself
  EXPECT_EQ(woken, 2);
  EXPECT_TRUE(learner.evaluated([] {}));
}

TEST(ExternalLearner, ReportsTheLoopsEvaluationOnce) {
  ExternalLearner learner(1);
  EXPECT_FALSE(learner.evaluation(nullptr, true));
  learner.report({.loss = 0.7, .accuracy = 0.8});
  const auto e = learner.evaluation(nullptr, false);  // whatever the round: the loop chose it
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->accuracy.value(), 0.8);
  EXPECT_FALSE(learner.evaluation(nullptr, true));
  // A language model's report: no accuracy, a metric of its own.
  learner.report({.loss = 2.5, .named = {{"perplexity", 12.2}}});
  const auto lm = learner.evaluation(nullptr, false);
  ASSERT_TRUE(lm);
  EXPECT_FALSE(lm->accuracy);
  EXPECT_DOUBLE_EQ(lm->loss.value(), 2.5);
  ASSERT_EQ(lm->named.size(), 1u);
  EXPECT_EQ(lm->named[0].first, "perplexity");
}

}  // namespace
}  // namespace phalanx::train
