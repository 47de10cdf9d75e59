// Signed statements in virtual time (docs/PROTOCOL.md "Equivocation"): an equivocator is
// convicted by every honest neighbour within (diameter + 1) rounds on a ring, a torus and a
// complete graph — where the old b + 1 reporters rule never convicted on the sparse ones — and
// no honest peer is ever convicted in clean, crash/restart, partition/heal or chaos runs, ten
// seeds each.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "node/simulation.h"
#include "tests/support/node_fixtures.h"
#include "tests/support/process.h"
#include "tests/support/sim_run.h"
#include "tests/support/temp_dir.h"
#include "topologies/analysis.h"
#include "topologies/topology.h"

namespace phalanx::node {
namespace {

using testing::at;
using testing::runSim;
using testing::SimRun;

std::shared_ptr<const topologies::Topology> shipped(const std::string& name) {
  return std::make_shared<const topologies::Topology>(
      topologies::loadTopology(testing::sourceDir() + "/topologies/" + name + ".yaml"));
}

// The round of the first record in which `at` counts `peer` convicted (none: never).
std::optional<std::uint64_t> convictedIn(const SimRun& r, std::uint32_t at, std::uint32_t peer) {
  for (const RoundRecord& rec : r.records[at]) {
    if (std::count(rec.equivocators.begin(), rec.equivocators.end(), peer)) return rec.round;
  }
  return std::nullopt;
}

// The peers any honest peer convicted, the `attackers` left aside.
std::set<std::uint32_t> honestConvicted(const SimRun& r, const std::set<std::uint32_t>& attackers) {
  std::set<std::uint32_t> out;
  for (std::uint32_t i = 0; i < r.records.size(); ++i) {
    if (attackers.contains(i)) continue;
    for (const RoundRecord& rec : r.records[i]) {
      for (const std::uint32_t j : rec.equivocators)
        if (!attackers.contains(j)) out.insert(j);
    }
  }
  return out;
}

// The longest shortest path between two peers.
std::uint64_t diameterOf(const topologies::Topology& t) {
  std::uint64_t longest = 0;
  for (const auto& from : t.nodes()) {
    for (const auto& [_, hops] : topologies::hopsFrom(t, from.id))
      longest = std::max<std::uint64_t>(longest, hops);
  }
  return longest;
}

Config base(std::uint64_t rounds) {
  Config c = testing::syntheticConfig(rounds, 300, rounds);
  c.rounds.quorum = true;
  return c;
}

class Equivocator : public ::testing::TestWithParam<std::string> {};

TEST_P(Equivocator, IsConvictedByEveryHonestNeighbourWithinTheDiameterPlusOneRounds) {
  const std::string name = GetParam();
  const auto topology = name == "complete-8" ? testing::completeGraph(8, 1) : shipped(name);
  const std::uint32_t liar = 5;
  const std::uint64_t diameter = diameterOf(*topology);
  const SimRun r = runSim(base(30), topology, {}, 2, {}, {{liar, "equivocate:alie"}});
  for (const std::uint32_t j : topology->neighbours(liar)) {
    const auto caught = convictedIn(r, j, liar);
    ASSERT_TRUE(caught.has_value()) << name << ": neighbour " << j << " never convicted it";
    // It equivocates from round 0 on.
    EXPECT_LE(*caught, diameter + 1) << name << ": neighbour " << j;
    // Left out of every mix after its conviction.
    EXPECT_EQ(r.mixedCount(j, liar, *caught + 1), 0u) << name << ": neighbour " << j;
  }
  EXPECT_TRUE(honestConvicted(r, {liar}).empty()) << name;
}

INSTANTIATE_TEST_SUITE_P(Graphs, Equivocator, ::testing::Values("ring-8", "torus-16", "complete-8"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(Equivocation, NoHonestPeerIsConvictedInTenSeedsOfCleanCrashPartitionAndChaosRuns) {
  const auto ring = shipped("ring-8");
  const auto complete = testing::completeGraph(8, 2);
  std::vector<std::uint32_t> ids(8);
  std::iota(ids.begin(), ids.end(), 0u);
  std::size_t runs = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Config c = base(60);
    c.seed = seed;
    c.checkpoint.every = 5;
    const std::string at_seed = "seed " + std::to_string(seed);
    EXPECT_TRUE(honestConvicted(runSim(c, ring), {}).empty()) << "clean, " << at_seed;
    {
      testing::TempDir dir;  // the checkpoints, and the record of the rounds signed
      const SimRun r =
          runSim(c, complete, {at(0.043, 2, "crash"), at(0.046, 2, "restart")}, 2, dir.path());
      EXPECT_TRUE(honestConvicted(r, {}).empty()) << "crash/restart, " << at_seed;
      EXPECT_EQ(r.result.finished.size(), 8u) << at_seed;
    }
    const SimRun cut = runSim(c, complete, {at(0.03, 3, "partition 0,1,2"), at(0.08, 3, "heal")});
    EXPECT_TRUE(honestConvicted(cut, {}).empty()) << "partition/heal, " << at_seed;
    {
      testing::TempDir dir;
      const auto faults = chaosFaults(*complete, ids, 6, 0.2, seed);
      std::set<std::uint32_t> switched;  // peers the chaos turned into attackers
      for (const auto& f : faults)
        if (std::holds_alternative<fault::SwitchAttack>(f.command)) switched.insert(f.node);
      const SimRun r = runSim(c, complete, faults, 2, dir.path());
      EXPECT_TRUE(honestConvicted(r, switched).empty()) << "chaos, " << at_seed;
    }
    runs += 4;
  }
  EXPECT_EQ(runs, 40u);
}

}  // namespace
}  // namespace phalanx::node
