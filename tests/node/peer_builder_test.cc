// How a peer is put together (node/peer_builder.h): its round gate's and transport's configs
// and the parts of its exchange mode, checked before anything starts.
#include "node/peer_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "net/certs.h"
#include "tests/support/node_fixtures.h"
#include "tests/support/temp_dir.h"
#include "train/data_source.h"

namespace phalanx::node {
namespace {

using testing::attackNamed;
using testing::completeGraph;
using ::testing::HasSubstr;
using testing::syntheticConfig;
using ::testing::ThrowsMessage;

PeerSetup setupOn(std::shared_ptr<const topologies::Topology> topology, std::uint32_t id,
                  Config config) {
  PeerSetup s;
  s.config = std::move(config);
  s.topology = std::move(topology);
  s.id = id;
  const train::TrainTest data = train::loadData(s.config.data, s.config.seed);
  s.shard = train::shardOf(s.config.data, data.train, s.topology->size(), id, s.config.seed);
  return s;
}

std::shared_ptr<const topologies::Topology> star(std::size_t n) {
  std::vector<topologies::NodeSpec> nodes;
  std::vector<topologies::Edge> edges;
  for (std::uint32_t i = 0; i < n; ++i) {
    nodes.push_back({.id = i, .port = std::uint16_t(21000 + i)});
    if (i > 0) edges.push_back({0, i});
  }
  return std::make_shared<const topologies::Topology>(nodes, edges, 1);
}

TEST(PeerBuilder, RunDataDealsEachPeerTheShardItWouldSplitAlone) {
  // The simulation splits once for all peers (loadRunData); the daemon's peer, and every test
  // fixture, split for themselves (train::shardOf): both must hand peer k the same samples.
  for (const auto partition : {train::PartitionKind::kIid, train::PartitionKind::kDirichlet}) {
    Config c = syntheticConfig(100, 2000);
    c.data.partition = partition;
    c.data.alpha = 0.5;
    c.compression.feedback = compress::FeedbackKind::kEf21W;  // asks for the shard sizes
    const RunData run = loadRunData(c, 7);
    ASSERT_EQ(run.parts.size(), 7u);
    ASSERT_EQ(run.shard_sizes.size(), 7u);
    for (std::size_t k = 0; k < 7; ++k) {
      PeerSetup s{.config = c};
      giveShard(s, run, k);
      const train::Dataset alone = train::shardOf(c.data, run.data.train, 7, k, c.seed);
      EXPECT_EQ(s.shard.x, alone.x) << k;
      EXPECT_EQ(s.shard.y, alone.y) << k;
      EXPECT_EQ(run.shard_sizes[k], alone.size()) << k;
      EXPECT_EQ(s.shard_sizes, run.shard_sizes);
    }
  }
}

TEST(PeerBuilder, TheGateWaitsForAQuorumOfDegMinusBButAtLeastBPlusOne) {
  Config c = syntheticConfig(100, 2000);
  c.rounds.quorum = true;
  const PeerSetup s = setupOn(completeGraph(10, 2), 0, c);  // degree 9, b = 2
  const net::GateConfig honest = gateConfig(s, 9, 100);
  EXPECT_EQ(honest.quorum, 7u);
  EXPECT_EQ(honest.budget, 2u);
  EXPECT_EQ(honest.deadline.fixed_ms, 2000.0);
  EXPECT_TRUE(honest.deadline.adaptive);
  EXPECT_EQ(honest.last_round, 99u);
  // A Byzantine peer waits for the honest neighbours it knows of, half the ceiling.
  PeerSetup attacker = setupOn(completeGraph(10, 2), 0, c);
  attacker.attack = attackNamed("alie");
  const net::GateConfig byzantine = gateConfig(attacker, 6, 100);
  EXPECT_EQ(byzantine.quorum, 6u);
  EXPECT_EQ(byzantine.deadline.fixed_ms, 1000.0);
  // A leaf waits for its hub up to the ceiling.
  Config hub = c;
  hub.exchange = Exchange::kHub;
  const PeerSetup leaf = setupOn(star(10), 3, hub);
  EXPECT_TRUE(isLeaf(leaf));
  EXPECT_FALSE(isLeaf(setupOn(star(10), 0, hub)));
  EXPECT_FALSE(gateConfig(leaf, 1, 100).deadline.adaptive);
  // deg <= 2b: deg - b arrivals could all be Byzantine; b + 1 of them cannot.
  const PeerSetup sparse = setupOn(completeGraph(4, 2), 1, c);  // degree 3
  EXPECT_EQ(gateConfig(sparse, 3, 100).quorum, 3u);
  // Without the quorum: every live neighbour, up to a fixed ceiling.
  Config sync = c;
  sync.rounds.quorum = false;
  const net::GateConfig all = gateConfig(setupOn(completeGraph(10, 2), 0, sync), 9, 1);
  EXPECT_EQ(all.quorum, 0u);
  EXPECT_FALSE(all.deadline.adaptive);
}

TEST(PeerBuilder, AByzantinePeerAwaitsOnlyTheHonestNeighboursItKnowsOf) {
  Config c = syntheticConfig(100, 2000);
  c.byzantine[3] = {.attack = attackNamed("alie")};
  c.byzantine[4] = {.attack = attackNamed("alie")};
  const std::vector<std::uint32_t> all{0, 1, 2, 4};
  EXPECT_EQ(awaitedOf(setupOn(completeGraph(5, 2), 3, c), all),
            (std::vector<std::uint32_t>{0, 1, 2}));
  // An honest peer, and one named Byzantine that starts honest ("none"), await everyone.
  EXPECT_EQ(awaitedOf(setupOn(completeGraph(5, 2), 0, c), all), all);
  c.byzantine[3] = {.attack = attackNamed("none")};
  EXPECT_EQ(awaitedOf(setupOn(completeGraph(5, 2), 3, c), all), all);
  // A protocol role sends honest vectors and waits like an honest peer.
  c.byzantine[3] = {.attack = attackNamed("stall")};
  EXPECT_EQ(awaitedOf(setupOn(completeGraph(5, 2), 3, c), all), all);
}

TEST(PeerBuilder, TheTransportListensOnTheTopologysPortAndOutlivesADeadline) {
  Config c = syntheticConfig(100, 7000);
  PeerSetup s = setupOn(completeGraph(3, 1), 2, c);
  net::TransportConfig tc = transportConfig(s, 42, "digest", {0, 1});
  EXPECT_EQ(tc.self, 2u);
  EXPECT_EQ(tc.model_dim, 42u);
  EXPECT_EQ(tc.config_digest, "digest");
  EXPECT_EQ(tc.listen_port, 20002);
  EXPECT_EQ(tc.liveness_timeout, std::chrono::milliseconds(7000));
  EXPECT_FALSE(tc.tls.enabled);
  s.listen_port = 0;
  s.config.rounds.deadline_ms = 500;  // never below the transport's own 3 s
  testing::TempDir certs;
  const std::uint32_t ids[] = {0, 1, 2};
  ASSERT_TRUE(net::writeClusterCerts(certs.path(), ids));
  s.config.security = {.mode = SecurityMode::kTls, .dir = certs.path().string()};
  tc = transportConfig(s, 42, "digest", {0, 1});
  EXPECT_EQ(tc.listen_port, 0);
  EXPECT_EQ(tc.liveness_timeout, std::chrono::milliseconds(3000));
  EXPECT_TRUE(tc.tls.enabled);
  EXPECT_EQ(tc.tls.key, net::nodeKeyFile(certs.path(), 2).string());
}

TEST(PeerBuilder, CertificatesComeFromTheFolderOrNamedFilesAndAMissingOneIsNamed) {
  testing::TempDir certs;
  const std::uint32_t ids[] = {0, 1};
  ASSERT_TRUE(net::writeClusterCerts(certs.path(), ids));
  const std::string dir = certs.path().string();
  const net::TlsFiles from_dir = certificateFiles({.dir = dir}, 1);
  EXPECT_EQ(from_dir.ca, dir + "/ca.pem");
  EXPECT_EQ(from_dir.cert, dir + "/node-1.pem");
  // Named files, "{id}" the node's own.
  const net::TlsFiles named = certificateFiles(
      {.ca = dir + "/ca.pem", .cert = dir + "/node-{id}.pem", .key = dir + "/node-{id}.key"}, 0);
  EXPECT_EQ(named.key, dir + "/node-0.key");
  // Node 5 has no certificate there; nothing named at all says how to get one.
  EXPECT_THAT([&] { checkCertificates(certificateFiles({.dir = dir}, 5), 5); },
              ThrowsMessage<ConfigError>(HasSubstr("security.cert: " + dir +
                                                   "/node-5.pem does "
                                                   "not exist")));
  EXPECT_THAT([&] { checkCertificates(certificateFiles({}, 0), 0); },
              ThrowsMessage<ConfigError>(HasSubstr("phalanx certs")));
}

TEST(PeerBuilder, EachExchangeModeGetsItsPartsAndRefusesWhatCannotRunHere) {
  auto& log = *spdlog::default_logger();
  Config c = syntheticConfig();
  PeerSetup s = setupOn(completeGraph(4, 1), 0, c);
  auto learner = learnerFor(s, {});
  const ExchangeParts dense = buildExchange(s, *learner, log);
  EXPECT_FALSE(dense.codec);
  EXPECT_FALSE(dense.gradient);
  s.config.compression.codec = compress::CodecId::kTopk;
  const ExchangeParts topk = buildExchange(s, *learner, log);
  EXPECT_TRUE(topk.codec);
  s.config.exchange = Exchange::kGradient;
  s.config.compression.feedback = compress::FeedbackKind::kEf21W;
  s.config.compression.weights = Ef21Weights::kData;
  EXPECT_THAT([&] { buildExchange(s, *learner, log); },
              ThrowsMessage<ConfigError>(HasSubstr("every peer's shard size")));
  s.shard_sizes = {100, 300, 300, 300};  // peer 0 holds a tenth: it publishes m / (4 · 0.1)
  const ExchangeParts ef21w = buildExchange(s, *learner, log);
  EXPECT_TRUE(ef21w.gradient);
  EXPECT_FLOAT_EQ(ef21w.own_scale, 2.5f);
  EXPECT_FLOAT_EQ(ef21w.unscale.at(1), 1.2f);
  s.config.exchange = Exchange::kHub;
  s.config.compression.feedback = compress::FeedbackKind::kEf21;
  EXPECT_THAT([&] { buildExchange(s, *learner, log); },
              ThrowsMessage<ConfigError>(HasSubstr("needs a star topology")));
  PeerSetup centre = setupOn(star(4), 0, s.config);
  const ExchangeParts hub = buildExchange(centre, *learner, log);
  EXPECT_EQ(hub.hub, std::optional<std::uint32_t>(0));
  EXPECT_TRUE(hub.broadcast);  // the downlink lives at the centre only
  PeerSetup leaf = setupOn(star(4), 2, s.config);
  EXPECT_FALSE(buildExchange(leaf, *learner, log).broadcast);
  PeerSetup outer = setupOn(completeGraph(4, 1), 0, syntheticConfig());
  outer.config.exchange = Exchange::kOuter;
  EXPECT_TRUE(buildExchange(outer, *learner, log).outer);
  outer.learner = learner;  // an external loop hands in one vector per round
  EXPECT_THAT([&] { buildExchange(outer, *learner, log); },
              ThrowsMessage<ConfigError>(HasSubstr("exchange: outer")));
}

}  // namespace
}  // namespace phalanx::node
