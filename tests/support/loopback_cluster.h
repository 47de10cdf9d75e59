// The round loop in one process on 127.0.0.1 (port 0), every peer a PeerNode on one io_context:
// the cluster the loopback tests (tests/node/peer_node_test.cc, peer_protocol_test.cc) run, and
// their helpers. Header-only; for tests linking node/.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "net/certs.h"
#include "net/tcp_transport.h"
#include "node/http_endpoint.h"
#include "node/peer_node.h"
#include "tests/support/node_fixtures.h"
#include "tests/support/run_until.h"
#include "tests/support/temp_dir.h"
#include "train/checkpoint.h"
#include "train/data_source.h"
#include "train/external_learner.h"
#include "train/local_trainer.h"

namespace phalanx::node {

// What the control endpoint does with a command's text: parsed, then applied.
inline std::expected<void, std::string> injectText(PeerNode& node, std::string_view text) {
  const auto command = parseFaultCommand(text);
  if (!command) return std::unexpected(command.error());
  return node.inject(*command);
}

inline std::shared_ptr<const topologies::Topology> ringGraph(std::size_t n, std::size_t budget) {
  std::vector<topologies::NodeSpec> nodes;
  std::vector<topologies::Edge> edges;
  for (std::uint32_t i = 0; i < n; ++i) {
    nodes.push_back({.id = i, .port = std::uint16_t(20000 + i)});
    edges.push_back({i, std::uint32_t((i + 1) % n)});
  }
  return std::make_shared<const topologies::Topology>(nodes, edges, budget);
}

class Cluster {
 public:
  Cluster(Config config, std::shared_ptr<const topologies::Topology> topology,
          std::map<std::uint32_t, std::string> attacks = {})
      : config_(std::move(config)), topology_(std::move(topology)), attacks_(std::move(attacks)) {
    // The attackers learn of each other from the config's byzantine map (the honest nodes
    // ignore it), so a rushing attacker does not wait for its fellows.
    for (const auto& [id, attack] : attacks_)
      config_.byzantine[id].attack = testing::attackNamed(attack);
    // security: tls: the cluster's certificates, made for this run.
    if (config_.security.mode == SecurityMode::kTls && config_.security.dir.empty()) {
      std::vector<std::uint32_t> ids(topology_->size());
      std::iota(ids.begin(), ids.end(), 0u);
      const auto written = net::writeClusterCerts(certs_.path(), ids);
      EXPECT_TRUE(written) << written.error();
      config_.security.dir = certs_.path().string();
    }
    data_ = train::loadData(config_.data, config_.seed);
    test_ = std::make_shared<const train::Dataset>(data_.test);
    records_.resize(topology_->size());
    nodes_.resize(topology_->size());
    ports_.resize(topology_->size());
    for (std::uint32_t i = 0; i < topology_->size(); ++i) create(i, 0, {}, false);
    for (std::uint32_t i = 0; i < topology_->size(); ++i) connect(i);
  }

  void create(std::uint32_t id, std::uint16_t port, std::filesystem::path checkpoints,
              bool resume) {
    if (nodes_[id]) nodes_[id]->abort();  // a restart: the old process is gone
    PeerSetup s{
        .config = config_,
        .topology = topology_,
        .id = id,
        .listen_port = port,
        .shard = train::shardOf(config_.data, data_.train, topology_->size(), id, config_.seed),
        .test = test_,
        .checkpoint_dir = std::move(checkpoints),
        .resume = resume,
        .join_timeout = std::chrono::seconds(5)};
    if (config_.security.mode == SecurityMode::kTls && config_.security.statements)
      loadStatementKeys(s);
    nodes_[id] = std::make_unique<PeerNode>(io, std::move(s));
    ports_[id] = nodes_[id]->listen();
  }

  void connect(std::uint32_t id) {
    std::vector<net::PeerAddress> addresses;
    for (std::uint32_t j = 0; j < topology_->size(); ++j)
      addresses.push_back({j, "127.0.0.1", ports_[j]});
    nodes_[id]->connect(addresses);
  }

  void start(std::uint32_t id) {
    nodes_[id]->start(
        [this, id](const RoundRecord& r) {
          if (on_record) on_record(id, r);
          records_[id].push_back(r);
        },
        [] {});
  }

  // Every node connected to all its neighbours, then all start together.
  void startAll() {
    ASSERT_TRUE(testing::runUntil(io, [&] {
      for (std::uint32_t i = 0; i < topology_->size(); ++i) {
        if (nodes_[i]->transport().livePeers().size() != topology_->degree(i)) return false;
      }
      return true;
    }));
    for (std::uint32_t i = 0; i < topology_->size(); ++i) start(i);
  }

  bool runToEnd(std::chrono::milliseconds limit = std::chrono::seconds(120)) {
    return testing::runUntil(
        io,
        [&] {
          for (const auto& n : nodes_) {
            if (!n->finished()) return false;
          }
          return true;
        },
        limit);
  }

  double honestMeanAccuracy() const {
    double sum = 0;
    int count = 0;
    for (std::uint32_t i = 0; i < topology_->size(); ++i) {
      if (attacks_.contains(i)) continue;
      sum += records_[i].back().test_accuracy.value_or(0);
      ++count;
    }
    return sum / count;
  }

  PeerNode& operator[](std::uint32_t id) { return *nodes_[id]; }
  std::vector<RoundRecord>& records(std::uint32_t id) { return records_[id]; }
  std::uint16_t port(std::uint32_t id) const { return ports_[id]; }
  const train::TrainTest& data() const { return data_; }

  asio::io_context io;
  std::function<void(std::uint32_t, const RoundRecord&)> on_record;  // before the record is kept

 private:
  testing::TempDir certs_;
  Config config_;
  std::shared_ptr<const topologies::Topology> topology_;
  std::map<std::uint32_t, std::string> attacks_;
  train::TrainTest data_;
  std::shared_ptr<const train::Dataset> test_;
  std::vector<std::unique_ptr<PeerNode>> nodes_;
  std::vector<std::uint16_t> ports_;
  std::vector<std::vector<RoundRecord>> records_;
};

}  // namespace phalanx::node
