// The round loop in one process on 127.0.0.1 (port 0), every node on one io_context: a
// hand-computed uncompressed MoNNA round, eight nodes learning the synthetic task about as well
// as centralized training, bit-identical reruns, Byzantine peers against NNA and mean, CHOCO
// compression, garbage on a port, injected faults. What depends on timing (rushing and stalling
// peers, crash and restart, partitions) runs in virtual time: tests/node/simulation_test.cc.
#include "node/peer_node.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/loopback_cluster.h"

namespace phalanx::node {
namespace {

using namespace std::chrono_literals;
using testing::attackNamed;
using testing::completeGraph;
using testing::syntheticConfig;

TEST(PeerNode, UncompressedRoundIsMonnaByHand) {
  // Three nodes, complete graph, b = 1: each keeps itself and its nearest peer and averages.
  Config c = syntheticConfig();
  c.rounds.count = 1;
  auto topology = completeGraph(3, 1);
  Cluster cluster(c, topology);
  // The half steps y_i, by hand: the same trainer each node builds, one step.
  std::vector<std::vector<float>> y;
  for (std::uint32_t i = 0; i < 3; ++i) {
    train::LocalTrainer t(trainerConfig(c),
                          train::shardOf(c.data, cluster.data().train, 3, i, c.seed), c.seed);
    t.step(0);
    y.emplace_back(t.parameters().begin(), t.parameters().end());
  }
  cluster.startAll();
  ASSERT_TRUE(cluster.runToEnd());
  for (std::uint32_t i = 0; i < 3; ++i) {
    std::vector<double> distance(3);
    for (std::uint32_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < y[i].size(); ++k)
        distance[j] += std::pow(double(y[i][k]) - y[j][k], 2);
    }
    const std::uint32_t a = (i + 1) % 3, b = (i + 2) % 3;
    const std::uint32_t nearest =
        distance[a] < distance[b] || (distance[a] == distance[b] && a < b) ? a : b;
    const std::uint32_t farthest = nearest == a ? b : a;
    ASSERT_EQ(cluster.records(i).size(), 1u);
    EXPECT_EQ(cluster.records(i)[0].excluded, std::vector<std::uint32_t>{farthest}) << "node " << i;
    const auto x = cluster[i].parameters();
    double worst = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double z = (double(y[i][k]) + double(y[nearest][k])) / 2;
      worst = std::max(worst, std::abs(x[k] - z) / (1 + std::abs(z)));
    }
    EXPECT_LT(worst, 1e-7) << "node " << i;  // float rounding of one sum and one halving
  }
}

TEST(PeerNode, ExternalLearnersMixWhatTheirLoopsHandIn) {
  // Three honest peers whose vectors come from training loops on other threads (the Python
  // package's path) and a sign-flipping attacker, complete graph, NNA with b = 1. Peer i hands
  // in the constant vector (r + 1)(i + 1) in round r: NNA keeps the three honest ones, whose
  // mean is exactly 2 (r + 1), and drops the attacker's -2 (r + 1).
  Config c = syntheticConfig(/*rounds=*/3, /*deadline_ms=*/5000, /*eval_every=*/2);
  c.rounds.quorum = false;
  c.mixing.rule = robust::RuleId::kNna;
  c.byzantine[3].attack = attackNamed("signflip");
  const auto topology = completeGraph(4, 1);
  constexpr std::size_t kDim = 5;
  asio::io_context io;
  std::vector<std::shared_ptr<train::ExternalLearner>> learners;
  std::vector<std::unique_ptr<PeerNode>> nodes;
  std::vector<std::vector<RoundRecord>> records(4);
  std::vector<net::PeerAddress> addresses;
  for (std::uint32_t i = 0; i < 4; ++i) {
    learners.push_back(std::make_shared<train::ExternalLearner>(kDim));
    nodes.push_back(std::make_unique<PeerNode>(io, PeerSetup{.config = c,
                                                             .topology = topology,
                                                             .id = i,
                                                             .listen_port = 0,
                                                             .learner = learners[i],
                                                             .join_timeout = 5s}));
    addresses.push_back({i, "127.0.0.1", nodes[i]->listen()});
  }
  int finished = 0;
  for (std::uint32_t i = 0; i < 4; ++i) {
    nodes[i]->connect(addresses);
    nodes[i]->start([&records, i](const RoundRecord& r) { records[i].push_back(r); },
                    [&finished] { ++finished; });
  }
  std::vector<std::vector<std::vector<float>>> mixes(3);
  std::vector<std::vector<train::ExternalLearner::Answer>> answers(3);
  std::vector<std::thread> loops;
  for (std::uint32_t i = 0; i < 3; ++i) {
    loops.emplace_back([&, i] {
      for (int r = 0; r < 4; ++r) {  // one more than the run has: the last is answered kFinished
        std::vector<float> v(kDim, float((r + 1) * (i + 1)));
        if (i == 0 && r == 0) learners[i]->report({.loss = 0.5, .accuracy = 0.25});
        auto a = learners[i]->submit(v, /*loss=*/r + 0.5);
        while (a == train::ExternalLearner::Answer::kPending) a = learners[i]->await(10ms);
        // Rounds 1 and 2 (eval_every 2, and the last) wait for the loop's evaluation.
        EXPECT_EQ(learners[i]->evaluationDue(),
                  a == train::ExternalLearner::Answer::kMixed && r >= 1);
        if (learners[i]->evaluationDue()) {
          learners[i]->report({.loss = 1.0 / (r + 1), .accuracy = 0.5 + 0.1 * r});
        }
        answers[i].push_back(a);
        mixes[i].push_back(v);
      }
    });
  }
  const bool done = testing::runUntil(
      io, [&] { return finished == 4; }, 30s);
  for (auto& n : nodes) n->stop();
  for (auto& l : learners) l->finished();  // a hung run must not leave the loops waiting
  for (auto& t : loops) t.join();
  ASSERT_TRUE(done);
  for (std::uint32_t i = 0; i < 3; ++i) {
    ASSERT_EQ(answers[i].size(), 4u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(answers[i][r], train::ExternalLearner::Answer::kMixed)
          << "peer " << i << " round " << r;
      EXPECT_EQ(mixes[i][r], std::vector<float>(kDim, float(2 * (r + 1))))
          << "peer " << i << " round " << r;
      EXPECT_EQ(records[i][r].excluded, std::vector<std::uint32_t>{3});
      EXPECT_DOUBLE_EQ(records[i][r].train_loss, r + 0.5);
    }
    EXPECT_EQ(answers[i][3], train::ExternalLearner::Answer::kFinished);
    EXPECT_EQ(learners[i]->roundsMixed(), 3u);
  }
  // The loop's evaluation of an evaluation round's mix is that round's; one reported outside
  // (peer 0, before round 0) lands in the next round's record.
  ASSERT_TRUE(records[0][0].test_accuracy);
  EXPECT_DOUBLE_EQ(*records[0][0].test_accuracy, 0.25);
  for (std::uint32_t i = 0; i < 3; ++i) {
    if (i > 0) {
      EXPECT_FALSE(records[i][0].test_accuracy);
    }
    for (int r = 1; r < 3; ++r) {
      ASSERT_TRUE(records[i][r].test_accuracy) << "peer " << i << " round " << r;
      EXPECT_DOUBLE_EQ(*records[i][r].test_accuracy, 0.5 + 0.1 * r);
    }
  }
}

TEST(PeerNode, RefusesWhatAnExternalLearnerCannotDo) {
  asio::io_context io;
  const auto topology = completeGraph(3, 0);
  const auto make = [&](const Config& c, const std::string& attack) {
    PeerNode n(io, PeerSetup{.config = c,
                             .topology = topology,
                             .id = 0,
                             .listen_port = 0,
                             .learner = std::make_shared<train::ExternalLearner>(10),
                             .attack = attack.empty() ? std::optional<AttackSpec>()
                                                      : attackNamed(attack)});
  };
  Config accordion = syntheticConfig();
  accordion.compression.codec = compress::CodecId::kTopk;
  accordion.compression.adaptive = true;
  EXPECT_THAT([&] { make(accordion, ""); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("compression.adaptive")));
  EXPECT_THAT([&] { make(syntheticConfig(), "labelflip"); },
              ::testing::ThrowsMessage<ConfigError>(::testing::HasSubstr("labelflip")));
}

TEST(PeerNode, EightNodesLearnLikeCentralizedAndRerunBitIdentically) {
  Config c = syntheticConfig();
  // Every round waits for every neighbour: a quorum close depends on arrival times, and a
  // bit-identical rerun over real sockets needs every message in every mix.
  c.rounds.quorum = false;
  auto topology = completeGraph(8, 2);
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 2; ++run) {
    Cluster cluster(c, topology);
    cluster.startAll();
    ASSERT_TRUE(cluster.runToEnd());
    for (std::uint32_t i = 0; i < 8; ++i) {
      ASSERT_EQ(cluster.records(i).size(), c.rounds.count);
      for (const RoundRecord& r : cluster.records(i)) {
        ASSERT_FALSE(r.deadline_hit) << "a deadline fired: the rerun may legitimately differ";
        ASSERT_EQ(r.mixed.size(), 7u);
      }
    }
    if (run == 0) {
      for (std::uint32_t i = 0; i < 8; ++i) {
        first.emplace_back(cluster[i].parameters().begin(), cluster[i].parameters().end());
      }
      // Centralized: one trainer on all the data, the same number of samples per round.
      Config central = c;
      central.data.batch = c.data.batch * 8;
      train::LocalTrainer alone(trainerConfig(central), cluster.data().train, c.seed);
      for (std::uint64_t t = 0; t < c.rounds.count; ++t) alone.step(t);
      const double centralized = alone.evaluate(cluster.data().test).accuracy.value();
      EXPECT_GT(centralized, 0.75);
      EXPECT_GT(cluster.honestMeanAccuracy(), centralized - 0.03) << "centralized " << centralized;
    } else {
      for (std::uint32_t i = 0; i < 8; ++i) {
        const auto x = cluster[i].parameters();
        EXPECT_TRUE(std::equal(x.begin(), x.end(), first[i].begin())) << "node " << i;
      }
    }
  }
}

// A node killed between writing round t's record and checkpointing round t + 1 must not
// resume past a round it never logged: each record goes out while the newest checkpoint on disk
// is still the previous one.
TEST(PeerNode, ARoundsRecordGoesOutBeforeItsCheckpoint) {
  Config c = syntheticConfig();
  c.rounds.count = 12;
  c.checkpoint.every = 4;
  testing::TempDir dir;
  Cluster cluster(c, completeGraph(3, 0));
  for (std::uint32_t i = 0; i < 3; ++i) {
    cluster.create(i, 0, dir.path() / ("ckpt-" + std::to_string(i)), false);
  }
  for (std::uint32_t i = 0; i < 3; ++i) cluster.connect(i);
  std::vector<std::uint64_t> newest_at_record;
  cluster.on_record = [&](std::uint32_t id, const RoundRecord& r) {
    if (id != 0) return;
    const auto loaded = train::CheckpointStore(dir.path() / "ckpt-0").loadLatest();
    newest_at_record.push_back(loaded.checkpoint ? loaded.checkpoint->round : 0);
    EXPECT_LE(newest_at_record.back(), r.round) << "round " << r.round;
  };
  cluster.startAll();
  ASSERT_TRUE(cluster.runToEnd());
  ASSERT_EQ(newest_at_record.size(), c.rounds.count);
  EXPECT_EQ(newest_at_record[4], 4u);  // round 3's checkpoint was written after round 3's record
  const auto last = train::CheckpointStore(dir.path() / "ckpt-0").loadLatest();
  ASSERT_TRUE(last.checkpoint);
  EXPECT_EQ(last.checkpoint->round, c.rounds.count);
}

TEST(PeerNode, NnaHoldsAgainstSignflipWhileMeanBreaks) {
  Config c = syntheticConfig();
  c.rounds.count = 200;
  auto topology = completeGraph(8, 2);
  c.rounds.quorum = false;  // the attackers' vectors in every mix: the test is of the rule
  const std::map<std::uint32_t, std::string> attackers{{3, "signflip"}, {6, "signflip"}};
  double nna = 0, mean = 0;
  for (const char* rule : {"nna", "mean"}) {
    c.mixing.rule = robust::kRules.parse(rule).value();
    Cluster cluster(c, topology, attackers);
    cluster.startAll();
    ASSERT_TRUE(cluster.runToEnd());
    (std::string(rule) == "nna" ? nna : mean) = cluster.honestMeanAccuracy();
    if (std::string(rule) == "nna") {
      // The attackers are excluded nearly every round by every honest node.
      for (std::uint32_t i : {0u, 1u, 2u, 4u, 5u, 7u}) {
        EXPECT_GE(cluster[i].metrics().peer_excluded_total.at(3), 190u) << "node " << i;
        EXPECT_GE(cluster[i].metrics().peer_excluded_total.at(6), 190u) << "node " << i;
      }
    }
  }
  EXPECT_GT(nna, 0.75);
  EXPECT_LT(mean, 0.5);
}

TEST(PeerNode, TopkGossipLearnsOnFewerBytes) {
  Config c = syntheticConfig();
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.05;
  c.compression.gamma = 0.1;  // CHOCO needs a small consensus step under top-5%
  c.compression.keyframe_every = 0;
  auto topology = completeGraph(4, 1);
  Cluster cluster(c, topology);
  cluster.startAll();
  ASSERT_TRUE(cluster.runToEnd());
  EXPECT_GT(cluster.honestMeanAccuracy(), 0.75);
  const auto& m = cluster[0].metrics();
  // Sparse deltas after one keyframe per neighbour: far fewer bytes than dense fp32.
  EXPECT_LT(double(m.bytes_sent_total) * 5, double(m.dense_bytes_total));
  EXPECT_EQ(m.keyframes_sent_total, 3u);
  EXPECT_EQ(m.resyncs_requested_total, 0u);
}

TEST(PeerNode, GradientRoundIsTheMeanMomentumStepByHand) {
  // exchange: gradient, uncompressed, mean: every node steps x0 - lr · mean_i((1 - beta) g_i).
  Config c = syntheticConfig();
  c.rounds.count = 1;
  c.exchange = Exchange::kGradient;
  c.mixing.rule = robust::RuleId::kMean;
  auto topology = completeGraph(3, 0);
  Cluster cluster(c, topology);
  std::vector<float> x0;
  std::vector<std::vector<float>> g;
  for (std::uint32_t i = 0; i < 3; ++i) {
    train::LocalTrainer t(trainerConfig(c),
                          train::shardOf(c.data, cluster.data().train, 3, i, c.seed), c.seed);
    x0.assign(t.parameters().begin(), t.parameters().end());  // the same for every node
    t.gradient();
    g.emplace_back(t.lastGradient().begin(), t.lastGradient().end());
  }
  cluster.startAll();
  ASSERT_TRUE(cluster.runToEnd());
  const double beta = c.optimizer.momentum;
  for (std::uint32_t i = 0; i < 3; ++i) {
    const auto x = cluster[i].parameters();
    double worst = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double m = (1 - beta) * (double(g[0][k]) + g[1][k] + g[2][k]) / 3;
      const double expected = x0[k] - c.optimizer.lr * m;
      worst = std::max(worst, std::abs(x[k] - expected) / (1 + std::abs(expected)));
    }
    EXPECT_LT(worst, 1e-6) << "node " << i;
    EXPECT_EQ(cluster.records(i)[0].mixed.size(), 2u);
  }
}

// Gradient mode on the synthetic task: DGC (top-1% after its warm-up) and EF21-SGDM (top-5%
// tracked replicas), each with NNA, two signflip attackers among eight.
TEST(PeerNode, GradientCodecsLearnUnderSignflip) {
  auto topology = completeGraph(8, 2);
  const std::map<std::uint32_t, std::string> attackers{{3, "signflip"}, {6, "signflip"}};
  for (const char* feedback : {"dgc", "ef21_sgdm"}) {
    Config c = syntheticConfig();
    c.exchange = Exchange::kGradient;
    c.compression.feedback = compress::kFeedbacks.parse(feedback).value();
    c.compression.codec =
        feedback == std::string("dgc") ? compress::CodecId::kTopkSampled : compress::CodecId::kTopk;
    c.compression.density = feedback == std::string("dgc") ? 0.01 : 0.05;
    c.compression.keyframe_every = 0;
    c.rounds.quorum = false;  // the attackers' vectors in every mix: the test is of the rule
    if (feedback == std::string("dgc")) c.optimizer.lr = 0.02;  // DGC's momentum sums 1/(1-mu) of g
    Cluster cluster(c, topology, attackers);
    cluster.startAll();
    ASSERT_TRUE(cluster.runToEnd());
    const double accuracy = cluster.honestMeanAccuracy();
    const auto& m = cluster[0].metrics();
    std::printf("gradient %s under signflip: honest mean accuracy %.4f, dense/sent bytes %.1f\n",
                feedback, accuracy, double(m.dense_bytes_total) / double(m.bytes_sent_total));
    EXPECT_GT(accuracy, 0.7) << feedback;
    EXPECT_LT(double(m.bytes_sent_total) * 5, double(m.dense_bytes_total)) << feedback;
    if (feedback == std::string("ef21_sgdm")) {
      // Tracked momenta are dense and smooth: NNA tells the attackers apart. (DGC's sparse
      // messages are far from one another, so the flipped mean, small and dense, is often
      // nearer the pivot than honest peers: the rule keeps it, and the step survives it.)
      EXPECT_GE(m.peer_excluded_total.at(3), 150u) << feedback;
    }
  }
}

TEST(PeerNode, AccordionSwitchesLevelsInModelGossip) {
  Config c = syntheticConfig();
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.1;  // LOW; HIGH is 0.01
  c.compression.gamma = 0.1;
  c.compression.keyframe_every = 0;
  c.compression.adaptive = true;
  c.compression.accordion_window = 10;
  auto topology = completeGraph(4, 1);
  Cluster cluster(c, topology);
  cluster.startAll();
  ASSERT_TRUE(cluster.runToEnd());
  const double accuracy = cluster.honestMeanAccuracy();
  const auto& m = cluster[0].metrics();
  std::printf(
      "accordion topk 10%%/1%%: accuracy %.4f, dense/sent bytes %.1f, low layers at the end %.0f\n",
      accuracy, double(m.dense_bytes_total) / double(m.bytes_sent_total), m.accordion_low_layers);
  EXPECT_GT(accuracy, 0.7);
  EXPECT_FALSE(std::isnan(m.accordion_low_layers));
  // Fewer bytes than top-10% everywhere would send: some layers spent windows at HIGH.
  EXPECT_LT(double(m.bytes_sent_total) * 8, double(m.dense_bytes_total));
}

TEST(PeerNode, GarbageOnThePortIsCountedAndTrainingGoesOn) {
  Config c = syntheticConfig();
  c.rounds.count = 200;
  auto topology = completeGraph(3, 0);
  Cluster cluster(c, topology);
  cluster.startAll();
  asio::ip::tcp::socket rogue(cluster.io);
  rogue.connect({asio::ip::make_address("127.0.0.1"), cluster.port(0)});
  const std::vector<std::uint8_t> garbage(4096, 0xAB);
  asio::write(rogue, asio::buffer(garbage));
  ASSERT_TRUE(cluster.runToEnd());
  EXPECT_EQ(cluster.records(0).size(), 200u);
  std::uint64_t rejected = 0;
  for (const auto& [reason, n] : cluster[0].metrics().messages_rejected_total) rejected += n;
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(cluster.honestMeanAccuracy(), 0.75);
}

TEST(PeerNode, WireLevelMisbehaviourIsCountedAndSurvived) {
  Config c = syntheticConfig();
  c.rounds.count = 150;
  // Every round waits for every live neighbour: with a quorum close the attacker's message can
  // miss a round on a loaded machine and be counted stale instead, which the counts below are
  // not about.
  c.rounds.quorum = false;
  auto topology = completeGraph(4, 1);
  for (const auto& [attack, reason] :
       std::vector<std::pair<std::string, std::string>>{{"garbage", "invalid_payload"},
                                                        {"wrong_dim", "invalid_payload"},
                                                        {"replay", "stale_sequence"}}) {
    Cluster cluster(c, topology, {{3, attack}});
    cluster.startAll();
    ASSERT_TRUE(cluster.runToEnd()) << attack;
    for (std::uint32_t i = 0; i < 3; ++i) {
      const auto& rejected = cluster[i].metrics().messages_rejected_total;
      ASSERT_TRUE(rejected.contains(reason)) << attack << " at node " << i;
      EXPECT_GE(rejected.at(reason), 140u) << attack << " at node " << i;
      EXPECT_EQ(cluster.records(i).size(), 150u);
      for (const RoundRecord& r : cluster.records(i)) {
        EXPECT_EQ(std::count(r.mixed.begin(), r.mixed.end(), 3u),
                  attack == "replay" && r.round == 0 ? 1 : 0)
            << attack << " round " << r.round;
      }
    }
    EXPECT_GT(cluster.honestMeanAccuracy(), 0.75) << attack;
  }
}

TEST(PeerNode, InjectedFaultsTakeEffectAndHeal) {
  Config c = syntheticConfig();
  c.rounds.count = 400;
  c.rounds.deadline_ms = 300;
  c.rounds.quorum = false;  // exclusions counted in every round: the sign-flipper always mixed
  auto topology = completeGraph(4, 1);
  Cluster cluster(c, topology);
  EXPECT_THAT(injectText(cluster[0], "explode").error(), ::testing::HasSubstr("unknown fault"));
  EXPECT_THAT(injectText(cluster[0], "drop 2").error(), ::testing::HasSubstr("[0, 1]"));
  EXPECT_THAT(injectText(cluster[0], "attack frobnicate").error(),
              ::testing::HasSubstr("not something a node can run"));
  EXPECT_THAT(injectText(cluster[0], "partition x").error(), ::testing::HasSubstr("not a node id"));
  cluster.startAll();
  const auto roundOf = [&](std::uint32_t id) {
    return cluster.records(id).empty() ? 0 : cluster.records(id).back().round;
  };
  ASSERT_TRUE(testing::runUntil(
      cluster.io, [&] { return roundOf(1) >= 20; }, 30s));

  // Node 1 turns into a sign-flipper: the others exclude it from then on.
  ASSERT_TRUE(injectText(cluster[1], "attack signflip").has_value());
  EXPECT_EQ(cluster[1].role(), PeerNode::Role::kVectorAttack);
  const std::uint64_t before = cluster[0].metrics().peer_excluded_total.contains(1)
                                   ? cluster[0].metrics().peer_excluded_total.at(1)
                                   : 0;
  const std::uint64_t switched = roundOf(0);
  ASSERT_TRUE(testing::runUntil(
      cluster.io, [&] { return roundOf(0) >= switched + 30; }, 30s));
  EXPECT_GE(cluster[0].metrics().peer_excluded_total.at(1) - before, 25u);
  ASSERT_TRUE(injectText(cluster[1], "attack none").has_value());

  // Node 2 drops half its messages: its receivers see gaps and ask for keyframes.
  ASSERT_TRUE(injectText(cluster[2], "drop 0.5").has_value());
  std::uint64_t resyncs = 0;
  const std::uint64_t dropping = roundOf(0);
  ASSERT_TRUE(testing::runUntil(
      cluster.io, [&] { return roundOf(0) >= dropping + 20; }, 30s));
  // Uncompressed, every message is a keyframe: a lost one is a missing peer, not a gap.
  std::size_t missing2 = 0;
  for (const RoundRecord& r : cluster.records(0)) {
    if (r.round > dropping && std::find(r.missing.begin(), r.missing.end(), 2u) != r.missing.end())
      ++missing2;
  }
  EXPECT_GE(missing2, 3u);
  for (std::uint32_t i = 0; i < 4; ++i) resyncs += cluster[i].metrics().resyncs_requested_total;
  EXPECT_EQ(resyncs, 0u);

  ASSERT_TRUE(injectText(cluster[2], "heal").has_value());
  ASSERT_TRUE(cluster.runToEnd());
  // Lost messages and attack switches are not equivocation (partitions, crashes, restarts,
  // rushing and stalling peers: tests/node/simulation_test.cc, in virtual time).
  for (std::uint32_t i = 0; i < 4; ++i)
    EXPECT_TRUE(cluster[i].metrics().equivocations_total.empty()) << i;
}

}  // namespace
}  // namespace phalanx::node
