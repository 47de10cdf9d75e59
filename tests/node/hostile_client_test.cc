// An outsider against a running cluster on loopback (docs/PROTOCOL.md "With and without TLS"):
// clients that speak the wire protocol open connections to one peer in the names of b + 1 of
// its lower-id neighbours (a lower id's dial is the one a pair keeps), announce round 2^62 in
// their heartbeats, and send keyframes of their own for the peer's next rounds with sequence
// numbers far ahead. Each run is measured against a control run of the same cluster.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "net/tcp_transport.h"
#include "node/exchange/replicas.h"
#include "tests/support/loopback_cluster.h"

namespace phalanx::node {
namespace {

using namespace std::chrono_literals;
using testing::completeGraph;
using testing::syntheticConfig;

struct Outcome {
  std::size_t skipped = 0;  // rounds an honest peer never ran (it caught up past them)
  // Rounds after the attack began in which a peer mixed nobody: while every link of a peer is
  // fought over (ring-8: both of the target's) nothing it hears is its neighbours'. Reported,
  // not bounded: it runs those rounds alone and mixes again once the links are its own.
  std::size_t alone = 0;
  std::size_t convicted = 0;    // honest peers some honest peer convicted of equivocation
  std::size_t locked_out = 0;   // (peer, neighbour) pairs not mixed in the last 20 rounds
  std::size_t refused_tls = 0;  // the target's TLS handshakes refused
  std::size_t connections = 0;  // the impostors' connections that got through the handshake
  double accuracy = 0;
};

constexpr std::uint64_t kRounds = 200;
constexpr std::uint64_t kAttackAt = 20;    // the target's round when the outsider starts
constexpr std::uint64_t kAttackEnd = 100;  // and when it stops, at the latest (or after 1.5 s)

Config clusterConfig(SecurityMode security) {
  // As the measurements (configs/experiments/smoke-base.yaml): synchronous rounds.
  Config c = syntheticConfig(kRounds, 2000, 40);
  c.rounds.quorum = false;
  c.security.mode = security;
  return c;
}

// The cluster run to its end; with `attack`, the outsider goes at `target` from its round
// kAttackAt on, for 1.5 s or until its round kAttackEnd.
Outcome run(SecurityMode security, std::shared_ptr<const topologies::Topology> topology,
            std::uint32_t target, bool attack) {
  Cluster cluster(clusterConfig(security), topology);
  std::vector<std::pair<std::uint32_t, std::unique_ptr<net::TcpTransport>>> impostors;
  asio::steady_timer lies(cluster.io), stop(cluster.io);
  std::uint64_t target_round = 0;
  std::mt19937 rng(7);
  std::function<void()> lie = [&] {
    // Keyframes of its own for the target's next rounds, far-ahead sequences, each time.
    std::normal_distribution<float> gauss;
    std::vector<float> v(cluster[target].dimension());
    for (float& x : v) x = 10 * gauss(rng);
    const auto payload = std::make_shared<const std::vector<std::uint8_t>>(encodeDense(v));
    for (auto& [named, impostor] : impostors) {
      for (std::uint64_t r = target_round + 1; r <= target_round + 4; ++r) {
        net::v1::RoundMessage h;
        h.set_round(r);
        h.set_sender(named);
        h.set_sequence(1'000'000 + r);
        h.set_kind(net::v1::RoundMessage::KEYFRAME);
        impostor->sendRound(target, h, payload);
      }
    }
    lies.expires_after(20ms);
    lies.async_wait([&](const asio::error_code& ec) {
      if (!ec) lie();
    });
  };
  const auto end = [&] {
    lies.cancel();
    for (auto& [_, impostor] : impostors) impostor->abort();
  };
  const auto begin = [&] {
    std::vector<std::uint32_t> named;
    for (const std::uint32_t j : topology->neighbours(target)) {
      if (j < target && named.size() <= topology->budgetOf(target)) named.push_back(j);
    }
    for (const std::uint32_t j : named) {
      auto impostor = std::make_unique<net::TcpTransport>(
          cluster.io,
          net::TransportConfig{.self = j,
                               .model_dim = cluster[target].dimension(),
                               .config_digest = cluster[target].configDigest(),
                               .listen_port = 0,
                               .neighbours = {target},
                               .heartbeat_every = 20ms,
                               // Replaced, it dials again: b + 1 names, about 3 connections
                               // each in the 1.5 s (the 6 connections in 1.5 s).
                               .backoff_initial = 500ms,
                               .backoff_max = 500ms},
          net::TransportHandlers{});
      impostor->setRound(std::uint64_t(1) << 62);
      impostor->listen();
      impostor->connect({{target, "127.0.0.1", cluster.port(target)}});
      impostors.emplace_back(j, std::move(impostor));
    }
    lie();
    stop.expires_after(1500ms);
    stop.async_wait([&](const asio::error_code&) { end(); });
  };
  cluster.on_record = [&](std::uint32_t id, const RoundRecord& r) {
    if (id != target) return;
    target_round = r.round;
    if (attack && r.round == kAttackAt) begin();
    if (attack && r.round == kAttackEnd) end();
  };
  cluster.startAll();
  EXPECT_TRUE(cluster.runToEnd());
  lies.cancel();
  stop.cancel();
  for (auto& [_, impostor] : impostors) impostor->abort();

  Outcome o;
  for (const auto& [_, impostor] : impostors) {
    if (const auto it = impostor->stats().peers.find(target); it != impostor->stats().peers.end())
      o.connections += it->second.connects;
  }
  std::set<std::uint32_t> convicted;
  for (std::uint32_t i = 0; i < topology->size(); ++i) {
    const auto& records = cluster.records(i);
    o.skipped += kRounds - records.size();
    std::set<std::uint32_t> recent;
    for (const RoundRecord& r : records) {
      if (r.round > kAttackAt && r.mixed.empty()) ++o.alone;
      convicted.insert(r.equivocators.begin(), r.equivocators.end());
      if (r.round + 20 >= kRounds) recent.insert(r.mixed.begin(), r.mixed.end());
    }
    for (const std::uint32_t j : topology->neighbours(i)) {
      if (recent.contains(j)) continue;
      ++o.locked_out;
      std::printf("  %u never mixed %u in the last 20 rounds\n", i, j);
    }
  }
  o.convicted = convicted.size();
  const auto& rejected = cluster[target].transport().stats().rejected;
  if (const auto it = rejected.find(net::Refusal::kTlsHandshake); it != rejected.end())
    o.refused_tls = it->second;
  o.accuracy = cluster.honestMeanAccuracy();
  return o;
}

void expectNoTrace(SecurityMode security, std::shared_ptr<const topologies::Topology> topology,
                   std::uint32_t target, const char* name) {
  const Outcome control = run(security, topology, target, false);
  const Outcome attacked = run(security, topology, target, true);
  std::printf(
      "%s, %s: impostor connections %zu, TLS refused %zu; skipped %zu, alone %zu, convicted "
      "%zu, locked out %zu, accuracy %.4f (control %.4f, alone %zu)\n",
      name, security == SecurityMode::kTls ? "tls" : "none", attacked.connections,
      attacked.refused_tls, attacked.skipped, attacked.alone, attacked.convicted,
      attacked.locked_out, attacked.accuracy, control.accuracy, control.alone);
  EXPECT_EQ(attacked.skipped, 0u) << name;
  EXPECT_EQ(attacked.convicted, 0u) << name;
  EXPECT_EQ(attacked.locked_out, 0u) << name;
  EXPECT_GE(attacked.accuracy, control.accuracy - 0.01) << name;
  if (security == SecurityMode::kTls) {
    EXPECT_GT(attacked.refused_tls, 0u) << name;
  }
}

TEST(HostileClient, ImpostorsLeaveNoTraceWithoutTls) {
  expectNoTrace(SecurityMode::kNone, completeGraph(4, 1), 3, "complete-4");
  expectNoTrace(SecurityMode::kNone, ringGraph(8, 1), 7, "ring-8");
}

TEST(HostileClient, UnderTlsImpostorsAreRefusedBeforeTheyClaimAnything) {
  expectNoTrace(SecurityMode::kTls, completeGraph(4, 1), 3, "complete-4");
  expectNoTrace(SecurityMode::kTls, ringGraph(8, 1), 7, "ring-8");
}

}  // namespace
}  // namespace phalanx::node
