// What node-level tests build clusters from: the synthetic task (no dataset files) with a small
// MLP, and a complete graph whose ports are placeholders. Header-only; for tests linking node/.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "node/config.h"
#include "topologies/topology.h"

namespace phalanx::testing {

// A known attack name as the node holds it ("alie", "equivocate:alie", "stall", ...).
inline node::AttackSpec attackNamed(std::string_view name) {
  return node::AttackSpec::parse(name).value();
}

inline node::Config syntheticConfig(std::uint64_t rounds = 300, std::uint64_t deadline_ms = 5000,
                                    std::uint64_t eval_every = 100) {
  node::Config c;
  c.seed = 5;
  c.threads = 1;
  c.data.dataset = train::DatasetKind::kSynthetic;
  c.data.batch = 32;
  c.data.synthetic = {
      .train = 4000, .test = 1000, .features = 32, .classes = 10, .separation = 0.5};
  c.model.kind = train::ModelKind::kMlp;
  c.model.hidden = {32};
  c.optimizer.lr = 0.1;
  c.optimizer.momentum = 0.9;
  c.rounds.count = rounds;
  c.rounds.deadline_ms = deadline_ms;
  c.rounds.eval_every = eval_every;
  // In-process clusters: no certificates (tests that need TLS set security themselves).
  c.security.mode = node::SecurityMode::kNone;
  return c;
}

// Ids 0..n-1, every pair an edge, budget b; ports 20000 + id (tests listen on port 0 or on
// none at all).
inline std::shared_ptr<const topologies::Topology> completeGraph(std::size_t n,
                                                                 std::size_t budget) {
  std::vector<topologies::NodeSpec> nodes;
  std::vector<topologies::Edge> edges;
  for (std::uint32_t i = 0; i < n; ++i) {
    nodes.push_back({.id = i, .port = std::uint16_t(20000 + i)});
    for (std::uint32_t j = i + 1; j < n; ++j) edges.push_back({i, j});
  }
  return std::make_shared<const topologies::Topology>(nodes, edges, budget);
}

}  // namespace phalanx::testing
