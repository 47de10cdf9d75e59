// The round loop against protocol-level attackers on loopback (docs/PROTOCOL.md "Threat
// model"): round lies, equivocation, resync floods and keyframe spam, a forged peer. Assertions
// are on what the records and counters say, never on how long a round took.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/peer_node.h"
#include "tests/support/loopback_cluster.h"

namespace phalanx::node {
namespace {

using namespace std::chrono_literals;
using testing::completeGraph;
using testing::syntheticConfig;

// Protocol-level attackers (docs/PROTOCOL.md "Threat model"). Assertions are on what the
// records and counters say, never on how long a round took.

TEST(PeerNodeProtocol, RoundLiesByBNeighboursMoveNoHonestPeer) {
  // ring-8, b = 1, node 3 lies about its round in every heartbeat and sends extra headers
  // claiming 2^62, 0, t+9 and t+1000: every honest peer runs its rounds in order to the last.
  Config c = syntheticConfig();
  c.rounds.count = 80;
  c.rounds.deadline_ms = 2000;
  auto topology = ringGraph(8, 1);
  double clean = 0;
  for (const bool lie : {false, true}) {
    Cluster cluster(c, topology,
                    lie ? std::map<std::uint32_t, std::string>{{3, "round_lie"}}
                        : std::map<std::uint32_t, std::string>{});
    cluster.startAll();
    ASSERT_TRUE(cluster.runToEnd());
    for (std::uint32_t i = 0; i < 8; ++i) {
      if (lie && i == 3) continue;
      // Every round, once, in order (a catch-up runs the rounds it skips alone).
      const auto& records = cluster.records(i);
      ASSERT_EQ(records.size(), c.rounds.count) << "node " << i;
      for (std::size_t k = 0; k < records.size(); ++k)
        ASSERT_EQ(records[k].round, k) << "node " << i;
      EXPECT_FALSE(cluster[i].diverged());
    }
    if (!lie) {
      clean = cluster.honestMeanAccuracy();
    } else {
      EXPECT_NEAR(cluster.honestMeanAccuracy(), clean, 0.02);
      const auto& rejected = cluster[2].metrics().messages_rejected_total;
      EXPECT_TRUE(rejected.contains("too_far_ahead"));  // the lies arrived and were refused
    }
  }
}

TEST(PeerNodeProtocol, EquivocationIsCaughtByEveryHonestNeighbourAndNoHonestPeerIs) {
  // complete-8, b = 2: node 7 crafts ALIE per target (each neighbour gets its own vector).
  // Over TLS: reports are evidence only between authenticated peers.
  Config c = syntheticConfig();
  c.security.mode = SecurityMode::kTls;
  c.rounds.count = 40;
  auto topology = completeGraph(8, 2);
  double clean_accuracy = 0;
  {
    Cluster clean(c, topology);
    clean.startAll();
    ASSERT_TRUE(clean.runToEnd());
    for (std::uint32_t i = 0; i < 8; ++i)
      EXPECT_TRUE(clean[i].metrics().equivocations_total.empty()) << i;
    clean_accuracy = clean.honestMeanAccuracy();
  }
  Cluster cluster(c, topology, {{7, "equivocate:alie"}});
  cluster.startAll();
  ASSERT_TRUE(cluster.runToEnd());
  for (std::uint32_t i = 0; i < 7; ++i) {
    const auto& caught = cluster[i].metrics().equivocations_total;
    ASSERT_EQ(caught.size(), 1u) << "node " << i;
    EXPECT_TRUE(caught.contains(7)) << "node " << i;
    // Caught from its first vectors on: out of every mix from round 2.
    for (const RoundRecord& r : cluster.records(i)) {
      if (r.round >= 2) {
        EXPECT_EQ(std::count(r.mixed.begin(), r.mixed.end(), 7u), 0) << i << " round " << r.round;
      }
    }
  }
  EXPECT_NEAR(cluster.honestMeanAccuracy(), clean_accuracy, 0.03);
}

TEST(PeerNodeProtocol, ResyncFloodsAndKeyframeSpamCostHonestPeersLittle) {
  // Top-k gossip (5 %), complete-6, b = 1: node 5 asks everyone for a keyframe every round, or
  // sends keyframes instead of deltas. Keyframes on request are granted at doubling intervals.
  Config c = syntheticConfig();
  c.rounds.count = 120;
  c.rounds.quorum = false;  // the same messages in every run: bytes compare exactly
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.05;
  c.compression.gamma = 0.2;
  auto topology = completeGraph(6, 1);
  const auto honestBytes = [&](std::map<std::uint32_t, std::string> attack) {
    Cluster cluster(c, topology, attack);
    cluster.startAll();
    EXPECT_TRUE(cluster.runToEnd());
    std::uint64_t sent = 0;
    for (std::uint32_t i = 0; i < 5; ++i) sent += cluster[i].metrics().bytes_sent_total;
    return double(sent);
  };
  const double clean = honestBytes({});
  const double flood = honestBytes({{5, "resync_flood"}});
  const double spam = honestBytes({{5, "keyframe_spam"}});
  std::printf("honest bytes sent: clean %.0f, resync_flood %.2fx, keyframe_spam %.2fx\n", clean,
              flood / clean, spam / clean);
  EXPECT_LT(flood, 1.5 * clean);
  EXPECT_LT(spam, 1.5 * clean);
}

TEST(PeerNodeProtocol, AForgedPeerAnnouncingRound2To62StopsNobody) {
  // A test client that speaks the wire protocol in place of node 2 (security: none) and claims
  // round 2^62 in every heartbeat and in round headers, on a triangle (b = 1) and on ring-8
  // (b = 1): the honest peers run to their last round, not to 2^62.
  for (const auto& topology : {completeGraph(3, 1), ringGraph(8, 1)}) {
    Config c = syntheticConfig();
    c.rounds.count = 60;
    c.rounds.deadline_ms = 500;
    constexpr std::uint32_t kForged = 2;
    asio::io_context io;
    const train::TrainTest data = train::loadData(c.data, c.seed);
    const auto test = std::make_shared<const train::Dataset>(data.test);
    std::map<std::uint32_t, std::unique_ptr<PeerNode>> nodes;
    std::map<std::uint32_t, std::vector<RoundRecord>> records;
    std::vector<net::PeerAddress> addresses;
    for (std::uint32_t i = 0; i < topology->size(); ++i) {
      if (i == kForged) continue;
      nodes[i] = std::make_unique<PeerNode>(
          io, PeerSetup{.config = c,
                        .topology = topology,
                        .id = i,
                        .listen_port = 0,
                        .shard = train::shardOf(c.data, data.train, topology->size(), i, c.seed),
                        .test = test,
                        .join_timeout = 5s});
      addresses.push_back({i, "127.0.0.1", nodes[i]->listen()});
    }
    const std::uint64_t far = std::uint64_t(1) << 62;
    net::TcpTransport forged(io,
                             {.self = kForged,
                              .model_dim = nodes.begin()->second->dimension(),
                              .config_digest = nodes.begin()->second->configDigest(),
                              .neighbours = topology->neighbours(kForged),
                              .heartbeat_every = 20ms},
                             {});
    forged.setRound(far);
    addresses.push_back({kForged, "127.0.0.1", forged.listen()});
    forged.connect(addresses);
    for (auto& [_, n] : nodes) n->connect(addresses);
    ASSERT_TRUE(testing::runUntil(io, [&] {
      for (auto& [i, n] : nodes) {
        if (n->transport().livePeers().size() != topology->degree(i)) return false;
      }
      return true;
    }));
    for (auto& [i, n] : nodes) {
      n->start([&records, i = i](const RoundRecord& r) { records[i].push_back(r); }, [] {});
    }
    // Round headers from the far future too, every 20 ms.
    asio::steady_timer lies(io);
    std::function<void()> lie = [&] {
      net::v1::RoundMessage h;
      h.set_round(far);
      h.set_sender(kForged);
      h.set_sequence(1);
      h.set_kind(net::v1::RoundMessage::KEYFRAME);
      const auto payload = std::make_shared<const std::vector<std::uint8_t>>(16, std::uint8_t(7));
      for (const std::uint32_t j : forged.livePeers()) forged.sendRound(j, h, payload);
      lies.expires_after(20ms);
      lies.async_wait([&](const asio::error_code& ec) {
        if (!ec) lie();
      });
    };
    lie();
    ASSERT_TRUE(testing::runUntil(
        io,
        [&] {
          for (auto& [_, n] : nodes) {
            if (!n->finished()) return false;
          }
          return true;
        },
        120s));
    lies.cancel();
    forged.abort();
    for (auto& [i, r] : records) {
      ASSERT_EQ(r.size(), c.rounds.count) << "node " << i << " of " << topology->size();
      for (std::size_t k = 0; k < r.size(); ++k) ASSERT_EQ(r[k].round, k) << "node " << i;
    }
  }
}

}  // namespace
}  // namespace phalanx::node
