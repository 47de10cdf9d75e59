// The node's timing-sensitive behaviour on the deterministic harness (node/simulation.h):
// every peer in one process, in virtual time, so these tests assert exact outcomes that no
// machine load can change: bit-identical reruns also when deadlines fire, a rushing attacker
// that waits for slow honest peers, stallers that do not set the honest pace, a crash with a
// restart from the checkpoint, a partition that heals, and a short chaos soak.
#include "node/simulation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "tests/support/node_fixtures.h"
#include "tests/support/process.h"
#include "tests/support/sim_run.h"
#include "tests/support/temp_dir.h"
#include "topologies/generators.h"

namespace phalanx::node {
namespace {

using namespace std::chrono_literals;
using testing::attackNamed;

using testing::at;
using testing::completeGraph;
using testing::runSim;
using testing::SimRun;

// The simulation tests' base: 100 rounds, a 1 s ceiling.
Config syntheticConfig() { return testing::syntheticConfig(100, 1000, 50); }

TEST(Simulation, RerunsAreBitIdenticalAlsoWhenDeadlinesFire) {
  Config c = syntheticConfig();
  c.rounds.count = 60;
  c.rounds.deadline_ms = 200;
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.1;
  // Node 3 starts each round 300 ms late from 0.1 s on: its neighbours' deadlines fire.
  const std::vector<SimulatedFault> faults{at(0.1, 3, "slow 300"), at(0.2, 1, "drop 0.3")};
  const SimRun one = runSim(c, completeGraph(5, 1), faults, 1);
  const SimRun two = runSim(c, completeGraph(5, 1), faults, 2);
  std::size_t deadlines = 0;
  for (std::uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(one.lines(i), two.lines(i)) << "node " << i;
    for (const auto& r : one.records[i]) deadlines += r.deadline_hit;
  }
  EXPECT_GT(deadlines, 0u);
  EXPECT_EQ(one.result.finished.size(), 5u);
}

TEST(Simulation, GammaAutoFollowsTheContractionOfEachPeersOwnDeltas) {
  // gamma: auto (the default) under top-10 %: each round's step is the average, in float with
  // weight 0.1, of the contractions 1 − ‖e‖²/‖Δ‖² the peer's deltas got, this round's included,
  // times the residual back-off (1, 1/2, … 1/16, never rising again; AutoConsensusStep's own
  // tests drive it by hand); uncompressed it is 1 and no record carries one.
  Config c = syntheticConfig();
  c.rounds.count = 30;
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.1;
  const SimRun r = runSim(c, completeGraph(3, 1));
  for (std::uint32_t i = 0; i < 3; ++i) {
    float avg = std::numeric_limits<float>::quiet_NaN();
    float scale = 1;
    ASSERT_EQ(r.records[i].size(), 30u);
    for (const auto& rec : r.records[i]) {
      ASSERT_TRUE(rec.contraction && rec.gamma && rec.residual)
          << "node " << i << " round " << rec.round;
      EXPECT_GT(*rec.contraction, 0.1);  // top-k keeps at least its share of the energy
      EXPECT_LE(*rec.contraction, 1.0);
      EXPECT_GT(*rec.residual, 0.0);
      const float now = float(*rec.contraction);
      avg = std::isnan(avg) ? now : avg + 0.1f * (now - avg);
      while (scale > 1.0f / 16 && *rec.gamma < std::clamp(double(scale * avg), 1e-3, 1.0)) {
        scale /= 2;
      }
      EXPECT_EQ(*rec.gamma, std::clamp(double(scale * avg), 1e-3, 1.0)) << "round " << rec.round;
    }
  }
  c.compression.codec = compress::CodecId::kNone;
  const SimRun dense = runSim(c, completeGraph(3, 1));
  for (const auto& rec : dense.records[0]) EXPECT_FALSE(rec.gamma || rec.contraction);
}

TEST(Simulation, RushingAttackerWaitsForSlowHonestPeersInsteadOfRunningAhead) {
  // Both honest peers start every round later than the attacker's half deadline (200 ms). An
  // attacker that ran on after hearing nothing would be a round ahead from then on, hear only
  // stale vectors, send nothing, and be missed every round. Held, it is in every honest mix.
  Config c = syntheticConfig();
  c.rounds.count = 40;
  c.rounds.deadline_ms = 400;
  c.byzantine[2].attack = attackNamed("signflip");
  const SimRun r = runSim(c, completeGraph(3, 1), {at(0, 0, "slow 250"), at(0, 1, "slow 250")});
  for (std::uint32_t i : {0u, 1u}) {
    ASSERT_EQ(r.records[i].size(), 40u);
    EXPECT_EQ(r.mixedCount(i, 2), 40u) << "node " << i;
  }
}

TEST(Simulation, StallersDoNotSetTheHonestPace) {
  // complete-8, b = 2: nodes 6 and 7 send every round's vector at 90 % of the 2 s ceiling. With
  // the quorum (deg - b = 5 honest neighbours) the honest rounds close on the honest arrivals:
  // the stallers enter no mix after the first round, and rounds last milliseconds, not seconds.
  Config c = syntheticConfig();
  c.rounds.count = 30;
  c.rounds.deadline_ms = 2000;
  c.byzantine[6].attack = attackNamed("stall");
  c.byzantine[7].attack = attackNamed("stall");
  const SimRun r = runSim(c, completeGraph(8, 2));
  const double ceiling = double(c.rounds.deadline_ms) / 1000;
  for (std::uint32_t i = 0; i < 6; ++i) {
    ASSERT_EQ(r.records[i].size(), c.rounds.count);
    EXPECT_EQ(r.mixedCount(i, 6, 1) + r.mixedCount(i, 7, 1), 0u) << "node " << i;
    for (const auto& rec : r.records[i]) {
      // Virtual seconds (the simulation's clock): a twentieth of the stallers' 2 s ceiling.
      if (rec.round > 0) {
        EXPECT_LT(rec.round_seconds, ceiling / 20) << "node " << i << " round " << rec.round;
      }
    }
  }
}

// The graph `kind` on n peers with budget b (ports irrelevant here).
std::shared_ptr<const topologies::Topology> generatedGraph(topologies::GraphKind kind,
                                                           std::size_t n, std::size_t b) {
  const auto edges = topologies::generateEdges(kind, n, {}).value();
  std::vector<topologies::NodeSpec> nodes;
  for (std::uint32_t i = 0; i < n; ++i)
    nodes.push_back({.id = i, .port = std::uint16_t(20000 + i)});
  return std::make_shared<const topologies::Topology>(nodes, edges, b);
}

// The mean honest round time from round 10 on (the first rounds wait for every neighbour, and
// for the estimator's first samples, once per run), in virtual seconds.
double steadyRoundSeconds(const SimRun& r, std::uint32_t staller) {
  double sum = 0;
  std::size_t count = 0;
  for (std::uint32_t i = 0; i < r.records.size(); ++i) {
    if (i == staller) continue;
    for (const auto& rec : r.records[i]) {
      if (rec.round < 10) continue;
      sum += rec.round_seconds;
      ++count;
    }
  }
  return count ? sum / double(count) : 0;
}

TEST(Simulation, OneStallerCostsARingAtMostThreeCleanRoundsAndDenseGraphsAQuarter) {
  // The staller starts every round at 90 % of the 1 s ceiling. On ring-8 (b = 1: deg ≤ 2b, so
  // the quorum is both neighbours and its neighbours' rounds end at the deadline) the deadline
  // learns the honest neighbour's pace, not the staller's; on torus-16 and complete-10 the
  // quorum closes rounds after a quarter's grace. Each compared with the clean run of the same
  // graph, in virtual time.
  Config c = syntheticConfig();
  c.rounds.count = 60;
  c.rounds.deadline_ms = 1000;
  struct Case {
    topologies::GraphKind kind;
    std::size_t n, b;
    std::uint32_t staller;
    double bound;
  };
  for (const Case& k : {Case{topologies::GraphKind::kRing, 8, 1, 3, 3.0},
                        Case{topologies::GraphKind::kTorus, 16, 1, 5, 1.25},
                        Case{topologies::GraphKind::kComplete, 10, 2, 7, 1.25}}) {
    const auto graph = generatedGraph(k.kind, k.n, k.b);
    const double clean = steadyRoundSeconds(runSim(c, graph), k.staller);
    const SimRun stalled = runSim(c, graph, {}, 2, {}, {{k.staller, "stall"}});
    const double with = steadyRoundSeconds(stalled, k.staller);
    EXPECT_GT(clean, 0);
    EXPECT_LE(with, k.bound * clean) << k.n << " peers: " << with << " s against " << clean;
    for (std::uint32_t i = 0; i < k.n; ++i) {
      if (i != k.staller) {
        EXPECT_EQ(stalled.records[i].size(), c.rounds.count) << i;
      }
    }
  }
}

TEST(Simulation, HandStartedAttackersAreFreedByTheQuorum) {
  // Two ALIE attackers that do not know of each other (`phalanx node --attack`, no byzantine
  // section): each waits for the other too, but its quorum (deg - b = 5 of the 7) frees it, so
  // no attacker round after the first (which waits for every live neighbour) hits its deadline,
  // and no honest round does.
  Config c = syntheticConfig();
  c.rounds.count = 40;
  c.rounds.deadline_ms = 2000;
  const SimRun r = runSim(c, completeGraph(8, 2), {}, 2, {}, {{6, "alie"}, {7, "alie"}});
  for (std::uint32_t i : {6u, 7u}) {
    ASSERT_EQ(r.records[i].size(), 40u);
    for (const auto& rec : r.records[i]) {
      EXPECT_EQ(rec.deadline_hit, rec.round == 0) << i << " " << rec.round;
    }
  }
  for (std::uint32_t i = 0; i < 6; ++i) {
    ASSERT_EQ(r.records[i].size(), 40u);
    for (const auto& rec : r.records[i]) EXPECT_FALSE(rec.deadline_hit) << i << " " << rec.round;
  }
}

// The index of the last record whose round does not follow the one before (a restart), or 0.
std::size_t restartIndex(const std::vector<RoundRecord>& records) {
  std::size_t at = 0;
  for (std::size_t k = 1; k < records.size(); ++k) {
    if (records[k].round != records[k - 1].round + 1) at = k;
  }
  return at;
}

// Node 2 of a complete graph of 4 (b = 1) crashes at `crash` and restarts from its checkpoints
// at `restart` (virtual seconds).
SimRun crashAndRestartNodeTwo(const Config& c, double crash, double restart) {
  testing::TempDir dir;
  return runSim(c, completeGraph(4, 1), {at(crash, 2, "crash"), at(restart, 2, "restart")}, 2,
                dir.path());
}

TEST(Simulation, CrashedNodeRestartsFromItsCheckpointAndIsMixedAgain) {
  Config c = syntheticConfig();
  c.rounds.count = 200;
  c.rounds.deadline_ms = 300;
  c.checkpoint.every = 10;
  const SimRun r = crashAndRestartNodeTwo(c, 0.15, 0.4);
  const auto& two = r.records[2];
  ASSERT_FALSE(two.empty());
  // The records of node 2 run up to the crash, then on from the round its neighbours were in.
  const std::size_t restart_at = restartIndex(two);
  ASSERT_GT(restart_at, 0u) << "no jump in node 2's rounds";
  EXPECT_GT(two[restart_at].round, two[restart_at - 1].round + 1);
  EXPECT_EQ(two.back().round, c.rounds.count - 1);
  EXPECT_GT(r.mixedCount(0, 2, two[restart_at].round), 0u);
  EXPECT_EQ(r.result.finished.size(), 4u);
  EXPECT_GT(r.records[0].back().test_accuracy.value_or(0), 0.75);
  // No honest round waited beyond its ceiling for the crashed peer (virtual seconds).
  const double ceiling = double(c.rounds.deadline_ms) / 1000;
  for (std::uint32_t i = 0; i < 4; ++i) {
    for (const auto& rec : r.records[i]) {
      EXPECT_LE(rec.round_seconds, ceiling) << i << " " << rec.round;
    }
  }
}

TEST(Simulation, GammaAutoResumesFromTheCheckpointInsteadOfStartingOver) {
  // A fresh gamma: auto steps its first round at exactly that round's contraction (the average
  // of one); a peer restarted from its checkpoint carries the average (and the back-off) over.
  Config c = syntheticConfig();
  c.rounds.count = 120;
  c.rounds.deadline_ms = 300;
  c.checkpoint.every = 5;
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.1;
  const SimRun r = crashAndRestartNodeTwo(c, 0.1, 0.3);
  const auto& two = r.records[2];
  ASSERT_FALSE(two.empty());
  ASSERT_TRUE(two.front().gamma && two.front().contraction);
  EXPECT_EQ(*two.front().gamma, std::clamp(double(float(*two.front().contraction)), 1e-3, 1.0));
  const std::size_t restart_at = restartIndex(two);
  ASSERT_GT(restart_at, 0u) << "node 2 never ran again";
  const RoundRecord& back = two[restart_at];
  ASSERT_TRUE(back.gamma && back.contraction);
  EXPECT_NE(*back.gamma, std::clamp(double(float(*back.contraction)), 1e-3, 1.0))
      << "round " << back.round << " stepped as a fresh start";
}

TEST(Simulation, APeerRestartedAfterTheOthersFinishedPacesItsLoneRoundsAsItHadLearned) {
  // Node 2 crashes early and comes back after the other three have finished: nobody is left to
  // connect to, so each of its remaining rounds waits for its deadline. Its checkpoint keeps
  // the arrival offsets it had learned, so that deadline is the adaptive one, not the 1 s
  // ceiling a fresh estimator would wait until it had seen 8 arrivals (which it never will).
  Config c = syntheticConfig();
  c.checkpoint.every = 5;
  const SimRun r = crashAndRestartNodeTwo(c, 0.1, 30.0);
  const auto& two = r.records[2];
  std::size_t restart_at = 0;
  for (std::size_t k = 1; k < two.size(); ++k) {
    if (two[k].round <= two[k - 1].round) restart_at = k;  // re-logged from its checkpoint
  }
  ASSERT_GT(restart_at, 0u) << "node 2 never ran again";
  ASSERT_LT(restart_at + 10, two.size()) << "too few lone rounds to judge";
  for (std::uint32_t i : {0u, 1u, 3u}) {
    ASSERT_EQ(r.records[i].back().round, c.rounds.count - 1);
  }
  EXPECT_EQ(two.back().round, c.rounds.count - 1);
  const double ceiling = double(c.rounds.deadline_ms) / 1000;
  for (std::size_t k = restart_at; k < two.size(); ++k) {
    EXPECT_TRUE(two[k].mixed.empty()) << two[k].round;
    // Virtual seconds: a fresh estimator would close each lone round at the ceiling (plus the
    // step's compute, 1.002 s here); the learned deadline closes it long before.
    EXPECT_LT(two[k].round_seconds, ceiling) << two[k].round;
  }
}

TEST(Simulation, APartitionedNodeHearsOnlyTheOtherSideUntilItHeals) {
  Config c = syntheticConfig();
  c.rounds.count = 150;
  c.rounds.quorum = true;
  // Rounds take ~4 ms of virtual time (2 ms computation, 1 ms links): cut at 0.1 s, heal at 0.3 s.
  const SimRun r =
      runSim(c, completeGraph(4, 1), {at(0.1, 3, "partition 0,1"), at(0.3, 3, "heal")});
  const auto& three = r.records[3];
  bool cut_seen = false, healed_seen = false;
  for (const auto& rec : three) {
    const bool only_two = rec.mixed == std::vector<std::uint32_t>{2};
    cut_seen |= only_two;
    if (rec.round > three.back().round - 10)
      healed_seen |= rec.mixed == std::vector<std::uint32_t>{0, 1, 2};
  }
  EXPECT_TRUE(cut_seen);
  EXPECT_TRUE(healed_seen);
  EXPECT_EQ(three.back().round, c.rounds.count - 1);
}

TEST(Simulation, ChaosSoakLeavesEveryHonestPeerFinished) {
  // 16 peers, 400 rounds, 12 random episodes of crash/restart, partition/heal and attack switches
  // (the long soak is `phalanx simulate --chaos`, docs/GUIDE.md). Under ASan in tools/test.
  Config c = syntheticConfig();
  c.rounds.count = 400;
  c.rounds.deadline_ms = 300;
  c.rounds.eval_every = 200;
  const auto topology = completeGraph(16, 3);
  std::vector<std::uint32_t> ids(16);
  std::iota(ids.begin(), ids.end(), 0);
  testing::TempDir dir;
  const auto faults = chaosFaults(*topology, ids, 12, 1.2, 9);
  const SimRun one = runSim(c, topology, faults, 2, dir.path());
  EXPECT_EQ(one.result.finished.size(), 16u);
  EXPECT_TRUE(one.result.crashed.empty());
  for (std::uint32_t i = 0; i < 16; ++i) {
    ASSERT_FALSE(one.records[i].empty());
    EXPECT_EQ(one.records[i].back().round, c.rounds.count - 1) << "node " << i;
  }
}

TEST(Simulation, SpectralAttackersAreEquivocatorsAndAreConvicted) {
  // Two worlds of 3 honest peers (ids 0-5, one link each) and 2 spectral attackers (6, 7)
  // joined to all of them: each honest peer gets its own vector from each attacker in round
  // 0. Those are equivocations: every honest peer convicts both by their digests and never
  // mixes them again.
  auto edges =
      topologies::generateEdges(topologies::GraphKind::kTwoWorlds, 8, {.links = 1, .byzantine = 2});
  ASSERT_TRUE(edges.has_value());
  std::vector<topologies::NodeSpec> nodes;
  for (std::uint32_t i = 0; i < 8; ++i)
    nodes.push_back({.id = i, .port = std::uint16_t(20000 + i)});
  const auto topology = std::make_shared<const topologies::Topology>(nodes, *edges, 2);
  Config c = syntheticConfig();
  c.rounds.count = 30;
  c.rounds.quorum = false;  // every round waits for the attackers (rushing, one hop behind)
  c.mixing.rule = robust::RuleId::kCsPlus;
  const SimRun r = runSim(c, topology, {}, 2, {}, {{6, "spectral"}, {7, "spectral"}});
  EXPECT_EQ(r.result.byzantine, (std::set<std::uint32_t>{6, 7}));
  for (std::uint32_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.records[i].back().round, c.rounds.count - 1);
    EXPECT_EQ(r.records[i].back().equivocators, (std::vector<std::uint32_t>{6, 7})) << i;
    for (std::uint32_t attacker : {6u, 7u}) {
      EXPECT_EQ(r.mixedCount(i, attacker, 0), 1u) << i << " " << attacker;  // round 0 only
    }
  }
  // To measure the rule alone: convicted, still mixed every round.
  c.mixing.exclude_equivocators = false;
  const SimRun kept = runSim(c, topology, {}, 2, {}, {{6, "spectral"}, {7, "spectral"}});
  for (std::uint32_t i = 0; i < 6; ++i) {
    EXPECT_EQ(kept.records[i].back().equivocators, (std::vector<std::uint32_t>{6, 7})) << i;
    for (std::uint32_t attacker : {6u, 7u}) {
      EXPECT_EQ(kept.mixedCount(i, attacker, 0), c.rounds.count) << i << " " << attacker;
    }
  }
}

// ClippedGossip's malicious ring: honest 0-4 in a ring, each with two Byzantine leaves of its
// own (5 + 2i, 6 + 2i), b = 2.
std::shared_ptr<const topologies::Topology> maliciousRing() {
  std::vector<topologies::NodeSpec> nodes;
  std::vector<topologies::Edge> edges;
  for (std::uint32_t i = 0; i < 15; ++i) {
    nodes.push_back({.id = i, .port = std::uint16_t(20000 + i)});
    if (i >= 5) nodes.back().byzantine_budget = 0;
  }
  for (std::uint32_t i = 0; i < 5; ++i) {
    edges.push_back({std::min(i, (i + 1) % 5), std::max(i, (i + 1) % 5)});
    edges.push_back({i, 5 + 2 * i});
    edges.push_back({i, 6 + 2 * i});
  }
  return std::make_shared<const topologies::Topology>(nodes, edges, 2);
}

TEST(Simulation, ColludingAttackersPoolWhatTheyHearAndSearchOnce) {
  // Alone, each attacker knows the one honest vector it hears; colluding, the ten pool theirs
  // over their side channel and know all five, and only the leader (id 5) computes: opt_alie's
  // line search once, dissensus once per honest target; the others send what it hands over. Every
  // attacker's vector reaches its honest neighbour in every round either way (rounds wait for every
  // neighbour).
  Config c = syntheticConfig();
  c.rounds.count = 20;
  c.rounds.quorum = false;
  for (const auto& [attack, collude] : {std::pair{"opt_alie", false},
                                        {"opt_alie", true},
                                        {"dissensus", false},
                                        {"dissensus", true}}) {
    SCOPED_TRACE(std::string(attack) + (collude ? " colluding" : " alone"));
    for (std::uint32_t b = 5; b < 15; ++b)
      c.byzantine[b] = {.attack = attackNamed(attack), .collude = collude};
    const SimRun r = runSim(c, maliciousRing());
    for (std::uint64_t t = 0; t < c.rounds.count; ++t) {
      std::size_t computed = 0;
      for (std::uint32_t b = 5; b < 15; ++b) {
        ASSERT_EQ(r.records[b].size(), c.rounds.count) << b;
        const RoundRecord& rec = r.records[b][t];
        EXPECT_EQ(rec.attack_known, collude ? 5u : 1u) << "attacker " << b << " round " << t;
        computed += rec.attack_computed;
      }
      EXPECT_EQ(computed, collude ? 1u : 10u) << "round " << t;
    }
    for (std::uint32_t i = 0; i < 5; ++i) {
      EXPECT_EQ(r.mixedCount(i, 5 + 2 * i), c.rounds.count) << i;
      EXPECT_EQ(r.mixedCount(i, 6 + 2 * i), c.rounds.count) << i;
    }
  }
}

TEST(Simulation, ColludersNextToTheSameHonestPeersShareOnlyMarkers) {
  // Complete-7, colluders 5 and 6: each hears all five honest vectors itself, so the side channel
  // carries count-0 markers, not vectors. Attacker 6 (not the leader) then sends about what an
  // honest peer sends (five vectors to its honest neighbours against the honest peer's six);
  // with the vectors shared it would send ten.
  Config c = syntheticConfig();
  c.rounds.count = 10;
  c.rounds.quorum = false;
  for (std::uint32_t b = 5; b < 7; ++b)
    c.byzantine[b] = {.attack = attackNamed("opt_alie"), .collude = true};
  const SimRun r = runSim(c, completeGraph(7, 2));
  for (std::uint64_t t = 0; t < c.rounds.count; ++t) {
    EXPECT_EQ(r.records[5][t].attack_known, 5u) << t;
    EXPECT_EQ(r.records[6][t].attack_known, 5u) << t;
    EXPECT_EQ(r.records[5][t].attack_computed + r.records[6][t].attack_computed, 1u) << t;
  }
  EXPECT_LT(r.records[6].back().bytes_sent_total, r.records[0].back().bytes_sent_total);
  EXPECT_GT(r.records[6].back().bytes_sent_total, r.records[0].back().bytes_sent_total / 2);
}

// A star of n peers: hub 0 with budget b, leaves with budget 0 (topology gen --kind star).
std::shared_ptr<const topologies::Topology> starGraph(std::size_t n, std::size_t b) {
  const auto edges = topologies::generateEdges(topologies::GraphKind::kStar, n, {}).value();
  const auto budgets = topologies::generatedBudgets(topologies::GraphKind::kStar, n, {});
  std::vector<topologies::NodeSpec> nodes;
  for (std::uint32_t i = 0; i < n; ++i)
    nodes.push_back({.id = i, .port = std::uint16_t(20000 + i), .byzantine_budget = budgets[i]});
  return std::make_shared<const topologies::Topology>(nodes, edges, b);
}

// exchange: hub with top-10 % both ways, error feedback at both ends.
Config hubConfig(std::uint64_t rounds) {
  Config c = syntheticConfig();
  c.rounds.count = rounds;
  c.exchange = Exchange::kHub;
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.1;
  c.compression.feedback = compress::FeedbackKind::kEf14;
  c.compression.broadcast = {.codec = compress::CodecId::kTopk, .density = 0.1};
  return c;
}

struct HubRun {
  SimRun run;
  std::map<std::uint32_t, std::vector<float>> parameters;  // at the end
  std::map<std::uint32_t, NodeMetrics> metrics;
};

HubRun runHub(Config config, std::shared_ptr<const topologies::Topology> topology,
              std::map<std::uint32_t, std::string> attacks = {}) {
  HubRun h;
  h.run.records.resize(topology->size());
  SimulationSetup s;
  s.config = std::move(config);
  s.topology = std::move(topology);
  s.threads = 2;
  for (const auto& [id, name] : attacks) s.attacks[id] = attackNamed(name);
  s.on_round = [&h](std::uint32_t id, const RoundRecord& rec) { h.run.records[id].push_back(rec); };
  s.on_sample = [&h](double, const std::map<std::uint32_t, const PeerNode*>& nodes) {
    for (const auto& [id, node] : nodes) {
      h.parameters[id].assign(node->parameters().begin(), node->parameters().end());
      h.metrics[id] = node->metrics();
    }
  };
  h.run.result = simulate(std::move(s));
  return h;
}

TEST(Simulation, HubAndLeavesApplyTheSameUpdateAndStayBitIdentical) {
  // Bidirectional top-k: every leaf decodes the hub's one compressed update and applies it as
  // the hub does, so after every round (checked after 1, 4 and 40) every model is the same to
  // the bit, and they learn.
  for (const std::uint64_t rounds : {1u, 4u, 40u}) {
    SCOPED_TRACE(rounds);
    const HubRun h = runHub(hubConfig(rounds), starGraph(5, 0));
    ASSERT_EQ(h.run.result.finished.size(), 5u);
    for (std::uint32_t leaf = 1; leaf < 5; ++leaf) {
      EXPECT_EQ(h.parameters.at(leaf), h.parameters.at(0)) << "leaf " << leaf;
      EXPECT_EQ(h.run.mixedCount(leaf, 0), rounds) << "leaf " << leaf;
    }
    EXPECT_EQ(h.run.mixedCount(0, 3), rounds);
    if (rounds == 40) {
      // Chance is 0.1 on the 10-class synthetic task.
      EXPECT_GT(h.run.records[2].back().test_accuracy, 0.3);
      // The hub's downlink: one top-10 % message per leaf per round, far below dense.
      const NodeMetrics& hub = h.metrics.at(0);
      EXPECT_EQ(hub.bytes_downlink_total, hub.bytes_sent_total);
      EXPECT_LT(hub.bytes_downlink_total * 4, hub.dense_bytes_total);
      EXPECT_EQ(h.metrics.at(1).bytes_uplink_total, h.metrics.at(1).bytes_sent_total);
      EXPECT_EQ(h.metrics.at(1).bytes_downlink_total, 0u);
    }
  }
}

TEST(Simulation, AMalformedBroadcastIsCountedAndSurvived) {
  // A hub that sends garbage (outside the threat model, which trusts the hub, but it must not
  // crash or poison a leaf): every leaf refuses every broadcast, counts it, keeps its model
  // finite and unchanged, and finishes.
  const HubRun clean = runHub(hubConfig(1), starGraph(4, 0));
  const HubRun h = runHub(hubConfig(12), starGraph(4, 0), {{0, "garbage"}});
  for (std::uint32_t leaf = 1; leaf < 4; ++leaf) {
    SCOPED_TRACE(leaf);
    EXPECT_TRUE(std::count(h.run.result.finished.begin(), h.run.result.finished.end(), leaf));
    EXPECT_TRUE(h.run.result.diverged.empty());
    EXPECT_EQ(h.run.mixedCount(leaf, 0), 0u);
    EXPECT_GE(h.metrics.at(leaf).messages_rejected_total.at("invalid_payload"), 10u);
    // No update was applied: the model is the one every peer starts from.
    EXPECT_NE(h.parameters.at(leaf), clean.parameters.at(leaf));
    EXPECT_EQ(h.parameters.at(leaf), h.parameters.at(1));
  }
}

TEST(Simulation, AttackingLeavesCraftFromTheirOwnPooledVectors) {
  // A leaf hears no other leaf: alone, an ALIE leaf knows its own honest vector; colluding, the
  // two pool theirs and the leader (id 5) computes once per round. Their vectors reach the hub
  // before it closes the round (it waits for every leaf).
  Config c = hubConfig(15);
  c.rounds.quorum = false;
  for (const bool collude : {false, true}) {
    SCOPED_TRACE(collude);
    for (const std::uint32_t b : {5u, 6u})
      c.byzantine[b] = {.attack = attackNamed("alie"), .collude = collude};
    const HubRun h = runHub(c, starGraph(7, 2));
    for (std::uint64_t t = 0; t < c.rounds.count; ++t) {
      std::size_t computed = 0;
      for (const std::uint32_t b : {5u, 6u}) {
        ASSERT_EQ(h.run.records[b].size(), c.rounds.count) << b;
        EXPECT_EQ(h.run.records[b][t].attack_known, collude ? 2u : 1u) << b << " round " << t;
        computed += h.run.records[b][t].attack_computed;
      }
      EXPECT_EQ(computed, collude ? 1u : 2u) << "round " << t;
    }
    EXPECT_EQ(h.run.mixedCount(0, 5), c.rounds.count);
    EXPECT_EQ(h.run.mixedCount(0, 6), c.rounds.count);
  }
}

TEST(Simulation, HubModeRefusesWhatItCannotRun) {
  const auto refusal = [](Config c, std::shared_ptr<const topologies::Topology> t) {
    try {
      runHub(std::move(c), std::move(t));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(ran)");
  };
  EXPECT_THAT(refusal(hubConfig(2), completeGraph(4, 1)),
              ::testing::HasSubstr("exchange: hub needs a star topology"));
  Config hub_attacks = hubConfig(2);
  hub_attacks.byzantine[0].attack = attackNamed("alie");
  EXPECT_THAT(refusal(hub_attacks, starGraph(4, 1)),
              ::testing::HasSubstr("a vector attack at the hub is outside"));
  Config per_target = hubConfig(2);
  per_target.byzantine[3].attack = attackNamed("dissensus");
  EXPECT_THAT(refusal(per_target, starGraph(4, 1)),
              ::testing::HasSubstr("dissensus crafts per target"));
}

// Gradient exchange with a tracked feedback kind on the complete graph of 5 (b = 1).
Config trackedConfig(const char* feedback, compress::CodecId codec, double density) {
  Config c = syntheticConfig();
  c.rounds.count = 60;
  c.exchange = Exchange::kGradient;
  c.compression.codec = codec;
  c.compression.density = density;
  c.compression.feedback = compress::kFeedbacks.parse(feedback).value();
  c.compression.keyframe_every = 0;
  return c;
}

TEST(Simulation, Ef21WAndDianaRunInGradientExchangeAndLearn) {
  // EF21-W with uniform weights is EF21 to the bit (n·w = 1); with the data weights of an
  // unequal split it scales each stream and its receivers undo it. DIANA with unbiased rand-25 %
  // steps its shifts by alpha = 1/(omega + 1) = 1/4. Every peer hears every other in every
  // round, and each learns.
  const SimRun ef21 =
      runSim(trackedConfig("ef21", compress::CodecId::kTopk, 0.1), completeGraph(5, 1));
  const SimRun uniform =
      runSim(trackedConfig("ef21_w", compress::CodecId::kTopk, 0.1), completeGraph(5, 1));
  for (std::uint32_t i = 0; i < 5; ++i) EXPECT_EQ(ef21.lines(i), uniform.lines(i)) << i;

  Config data = trackedConfig("ef21_w", compress::CodecId::kTopk, 0.1);
  data.data.partition = train::PartitionKind::kDirichlet;
  data.data.alpha = 0.5;
  data.compression.weights = Ef21Weights::kData;
  Config diana = trackedConfig("diana", compress::CodecId::kRandk, 0.25);
  diana.compression.unbiased = true;
  Config diana_shared = diana;  // every peer draws the same coordinates each round
  diana_shared.compression.shared_seed = true;
  for (const auto& [name, config] :
       {std::pair{"ef21_w data", data}, {"diana", diana}, {"diana shared", diana_shared}}) {
    SCOPED_TRACE(name);
    const SimRun r = runSim(config, completeGraph(5, 1));
    for (std::uint32_t i = 0; i < 5; ++i) {
      ASSERT_EQ(r.records[i].size(), 60u) << i;
      for (std::uint32_t j = 0; j < 5; ++j) {
        if (j != i) {
          EXPECT_EQ(r.mixedCount(i, j), 60u) << i << " hears " << j;
        }
      }
      EXPECT_GT(r.records[i].back().test_accuracy.value_or(0), 0.3) << i;  // chance: 0.1
      EXPECT_TRUE(r.records[i].back().equivocators.empty()) << i;
    }
  }
}

TEST(Simulation, DianaKeyframeRoundsTakeTheFullShiftSoNoHonestPeerLooksLikeAnEquivocator) {
  // Peer 2 drops 30 % of its messages: its receivers see gaps, ask for keyframes, and get them
  // while its other neighbours get deltas. Such a round takes the full step, so the keyframe
  // (the new shift) and the deltas (old shift + q) stand for the same vector: every honest
  // digest agrees and nobody is convicted, and the stream keeps learning.
  Config c = trackedConfig("diana", compress::CodecId::kRandk, 0.25);
  c.compression.unbiased = true;
  c.rounds.deadline_ms = 200;
  const SimRun r = runSim(c, completeGraph(5, 1), {at(0.0, 2, "drop 0.3")});
  std::uint64_t keyframes_asked = 0;
  for (std::uint32_t i = 0; i < 5; ++i) {
    ASSERT_EQ(r.records[i].size(), 60u) << i;
    EXPECT_TRUE(r.records[i].back().equivocators.empty()) << i;
    EXPECT_GT(r.records[i].back().test_accuracy.value_or(0), 0.3) << i;
    if (i != 2) keyframes_asked += 60 - r.mixedCount(i, 2);
  }
  EXPECT_GT(keyframes_asked, 10u);  // the drops did cost rounds: the case was exercised
}

TEST(Simulation, TheOuterLoopLearnsWithAFifthOfTheMessagesAndMixesAttackedPseudoGradients) {
  // 100 local steps each way: per-step dense gradient exchange (100 rounds) against the outer
  // loop with H = 5 (20 rounds, each message one pseudo-gradient). Then an ALIE attacker among
  // the five: its vector is crafted from the honest pseudo-gradients and enters every mix.
  Config per_step = syntheticConfig();
  per_step.exchange = Exchange::kGradient;
  per_step.rounds.count = 100;
  Config outer = syntheticConfig();
  outer.exchange = Exchange::kOuter;
  outer.outer = {.steps = 5, .lr = 1.0, .momentum = 0.0};
  outer.rounds.count = 20;
  const SimRun a = runSim(per_step, completeGraph(5, 1));
  const SimRun b = runSim(outer, completeGraph(5, 1));
  for (std::uint32_t i = 0; i < 5; ++i) {
    ASSERT_EQ(b.records[i].size(), 20u);
    EXPECT_GT(b.records[i].back().test_accuracy.value_or(0), 0.3) << i;  // chance: 0.1
    EXPECT_LT(4 * b.records[i].back().bytes_sent_total, a.records[i].back().bytes_sent_total);
  }
  // Over models: the same round count and message count, each message a model through the
  // replicas, and the outer step toward their robust mix.
  Config models = outer;
  models.outer.mix = OuterMix::kModels;
  const SimRun m = runSim(models, completeGraph(5, 1));
  for (std::uint32_t i = 0; i < 5; ++i) {
    ASSERT_EQ(m.records[i].size(), 20u);
    EXPECT_GT(m.records[i].back().test_accuracy.value_or(0), 0.3) << i;
    EXPECT_LT(4 * m.records[i].back().bytes_sent_total, a.records[i].back().bytes_sent_total);
  }
  outer.byzantine[4].attack = attackNamed("alie");
  outer.rounds.quorum = false;
  const SimRun r = runSim(outer, completeGraph(5, 1));
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.mixedCount(i, 4), 20u) << i;
    EXPECT_GT(r.records[i].back().test_accuracy.value_or(0), 0.3) << i;
  }
  for (const auto& rec : r.records[4]) EXPECT_EQ(rec.attack_known, 4u);
}

TEST(Simulation, FaultAndLinkFilesAreParsedOrRefusedWithTheLine) {
  const auto f = parseFaults("# t node command\n0.5 3 crash\n\n1.25 3 restart  # back\n", "f.txt");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].at_seconds, 1.25);
  EXPECT_EQ(f[1].node, 3u);
  EXPECT_EQ(faultText(f[1].command), "restart");
  EXPECT_THAT([] { parseFaults("0.5 crash\n", "f.txt"); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("f.txt:1")));
  EXPECT_THAT([] { parseFaults("1 2\n", "g.txt"); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("g.txt:1: no command")));
  // A typo in a command fails at load, naming the line, instead of a run without the fault.
  EXPECT_THAT([] { parseFaults("0.1 2 crash\n0.5 3 partiton 1\n", "h.txt"); },
              ::testing::ThrowsMessage<ConfigError>(
                  ::testing::HasSubstr("h.txt:2: unknown fault 'partiton'")));
  EXPECT_THAT([] { parseFaults("0.5 3 drop 1.5\n", "h.txt"); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("h.txt:1: drop")));
  // Link files: per edge (either order), the rest at the fallback; a line that is not a link is
  // an error, not skipped.
  const auto links = parseLinks("# a b ms mbit\n3 1 20 100\n\n0 2 5\n", "l.txt",
                                {.latency = 1ms, .megabits_per_second = 0});
  EXPECT_EQ(links.of(1, 3).latency, 20ms);
  EXPECT_EQ(links.of(1, 3).megabits_per_second, 100);
  EXPECT_EQ(links.of(2, 0).latency, 5ms);
  EXPECT_EQ(links.of(0, 1).latency, 1ms);
  EXPECT_EQ(links.minLatency(), 1ms);
  EXPECT_THAT([] { parseLinks("x 1 2\n", "m.txt", {}); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("m.txt:1")));
  EXPECT_THAT([] { parseLinks("0 1 0\n", "m.txt", {}); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("latency > jitter")));
  for (const char* bad :
       {"0 1 5 100 5\n", "0 1 5 100 1 1\n", "0 1 5 x\n", "0 1 5 1 1 0.1 9\n", "within\n",
        "region eu\n", "region eu 1,x\n", "region a 0-3\nregion b 3-5\n"}) {
    EXPECT_THROW(parseLinks(bad, "m.txt", {}), ConfigError) << bad;
  }
}

TEST(Simulation, TheShippedWanFilesParse) {
  const auto read = [](const std::string& name) {
    std::ifstream in(testing::sourceDir() + "/configs/wan/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const auto links = parseLinks(read("regions-64.links"), "regions-64.links", {});
  EXPECT_EQ(links.region_of.size(), 64u);
  EXPECT_EQ(links.of(0, 15).latency, 5ms);
  EXPECT_EQ(links.of(15, 16).latency, 80ms);
  EXPECT_EQ(links.minLatency(), 1ms);  // the fallback, for edges to nodes beyond 63
  const auto faults = parseFaults(read("churn-64.faults"), "churn-64.faults");
  EXPECT_EQ(faults.size(), 12u);
  EXPECT_EQ(
      std::count_if(faults.begin(), faults.end(),
                    [](const SimulatedFault& f) { return faultText(f.command) == "restart"; }),
      6);
}

TEST(Simulation, RegionsGiveEdgesTheirLinkClassUnlessAnEdgeHasItsOwn) {
  const auto links = parseLinks(
      "region eu 0-3\nregion us 4,5,6,7\nwithin 5 100 0 0.005\nacross 80 100 10 0.005\n"
      "2 5 40\n",
      "wan.txt", {.latency = 1ms});
  EXPECT_EQ(links.of(0, 3).latency, 5ms);  // inside eu
  EXPECT_EQ(links.of(6, 4).latency, 5ms);  // inside us
  EXPECT_EQ(links.of(1, 7).latency, 80ms);
  EXPECT_EQ(links.of(1, 7).jitter, 10ms);
  EXPECT_DOUBLE_EQ(links.of(1, 7).loss, 0.005);
  EXPECT_DOUBLE_EQ(links.of(1, 7).megabits_per_second, 100);
  EXPECT_EQ(links.of(5, 2).latency, 40ms);  // the edge's own line wins
  EXPECT_EQ(links.of(0, 9).latency, 1ms);   // 9 has no region: the fallback
  EXPECT_EQ(links.minLatency(), 1ms);
}

TEST(Simulation, TheTopologysRegionsJoinTheLinksFiles) {
  auto nodes = topologies::numberedNodes(8, {});
  topologies::assignRegions(nodes, 2);  // 0-3 in r0, 4-7 in r1
  const topologies::Topology t(nodes, {{0, 1}, {1, 7}}, 0, "t.yaml");
  auto links = parseLinks("region r1 4-7\nwithin 5\nacross 80 0 10\n", "wan.txt", {.latency = 1ms});
  addTopologyRegions(links, t, "wan.txt");
  EXPECT_EQ(links.of(0, 3).latency, 5ms);
  EXPECT_EQ(links.of(1, 7).latency, 80ms);
  auto clash = parseLinks("region eu 0\n", "wan.txt", {});
  EXPECT_THAT([&] { addTopologyRegions(clash, t, "wan.txt"); },
              ::testing::ThrowsMessage<ConfigError>(
                  ::testing::HasSubstr("wan.txt: node 0 is in region eu there")));
}

}  // namespace
}  // namespace phalanx::node
