// The compute floor beside a simulation (node/compute_floor.h) and the digests its peers share
// (net/digest_memo.h): neither changes a single record of the run.
#include "node/compute_floor.h"

#include <gtest/gtest.h>

#include "tests/support/node_fixtures.h"
#include "tests/support/sim_run.h"

namespace phalanx {
namespace {

using testing::completeGraph;
using testing::syntheticConfig;

std::vector<std::vector<std::string>> recordsOf(node::Config config, std::uint64_t floor_steps,
                                                node::SimulationResult& result,
                                                bool hash_every_vector = false) {
  const auto topology = completeGraph(5, 1);
  std::vector<std::vector<std::string>> lines(topology->size());
  node::SimulationSetup s;
  s.config = std::move(config);
  s.topology = topology;
  s.threads = 2;
  s.floor_steps = floor_steps;
  s.hash_every_vector = hash_every_vector;
  s.on_round = [&lines](std::uint32_t id, const node::RoundRecord& r) {
    lines[id].push_back(node::roundRecordJson(id, r));
  };
  result = node::simulate(std::move(s));
  return lines;
}

TEST(ComputeFloor, IsMeasuredBesideTheRunWithoutChangingIt) {
  node::Config config = syntheticConfig(30, 5000, 10);
  config.byzantine[4].attack = testing::attackNamed("alie");
  node::SimulationResult plain, measured;
  const auto without = recordsOf(config, 0, plain);
  const auto with = recordsOf(config, 25, measured);
  EXPECT_EQ(with, without);
  EXPECT_FALSE(plain.floor.has_value());
  ASSERT_TRUE(measured.floor.has_value());
  // Fresh learners on the four honest peers' shards (fewer than 8 per thread), 25 steps each.
  EXPECT_EQ(measured.floor->learners, 4u);
  EXPECT_EQ(measured.floor->steps, 100u);
  EXPECT_GT(measured.floor->wall_seconds, 0);
  EXPECT_NEAR(measured.floor->steps_per_second,
              double(measured.floor->steps) / measured.floor->wall_seconds, 1e-6);
  EXPECT_EQ(measured.floor->peer_rounds_per_second, measured.floor->steps_per_second);
}

TEST(ComputeFloor, ARoundOfTheOuterLoopIsHLocalSteps) {
  node::Config config = syntheticConfig();
  EXPECT_EQ(node::stepsPerRound(config), 1u);
  config.exchange = node::Exchange::kOuter;
  config.outer.steps = 8;
  EXPECT_EQ(node::stepsPerRound(config), 8u);
}

// Statements on (the default): each round's vector is hashed by its sender only, and each
// receiver compares bytes — four neighbours, four comparisons per vector sent.
TEST(DigestMemo, EveryVectorIsHashedOnceAndComparedByItsReceivers) {
  node::Config config = syntheticConfig(20, 5000, 10);
  ASSERT_TRUE(config.security.statements);
  node::SimulationResult result;
  recordsOf(config, 0, result);
  EXPECT_EQ(result.digests_hashed, result.peer_rounds);
  EXPECT_EQ(result.digests_compared, 4 * result.peer_rounds);
}

// --hash-every-vector: every receiver digests what it hears, as a deployed peer does; the memo
// is off (nothing counted) and every record is the memo's run's.
TEST(DigestMemo, HashingEveryVectorChangesNoRecord) {
  node::Config config = syntheticConfig(20, 5000, 10);
  config.byzantine[4].attack = testing::attackNamed("alie");
  node::SimulationResult memo, every;
  const auto with_memo = recordsOf(config, 0, memo);
  const auto hashing = recordsOf(config, 0, every, true);
  EXPECT_EQ(hashing, with_memo);
  EXPECT_FALSE(memo.every_vector_hashed);
  EXPECT_TRUE(every.every_vector_hashed);
  EXPECT_GT(memo.digests_compared, 0u);
  EXPECT_EQ(every.digests_hashed + every.digests_compared, 0u);
}

}  // namespace
}  // namespace phalanx
