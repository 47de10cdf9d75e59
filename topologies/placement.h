// Where an attacker would put its Byzantine peers (`phalanx topology place`): F ids chosen by a
// strategy, each added only while no honest node gets more Byzantine neighbours than its
// budget. The breakdown check of the result says how far the placement pushes the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/names.h"
#include "topologies/analysis.h"
#include "topologies/topology.h"

namespace phalanx::topologies {

enum class PlacementStrategy : std::uint8_t {
  kRandom,      // a seeded random order
  kCentrality,  // highest betweenness first (ties: higher degree, then lower id)
  kCut,         // greedy: each step the node that most lowers the honest graph's mu_2
  kMaxSpan,     // greedy: each step the node that reaches the most honest nodes not yet reached
};
inline constexpr auto kPlacementStrategies =
    base::nameTable<PlacementStrategy>({{PlacementStrategy::kRandom, "random"},
                                        {PlacementStrategy::kCentrality, "centrality"},
                                        {PlacementStrategy::kCut, "cut"},
                                        {PlacementStrategy::kMaxSpan, "maxspan"}});

struct Placement {
  std::vector<NodeId> byzantine;  // ascending; fewer than asked when the budgets ran out
  std::size_t requested = 0;
  // Of the placement, when at least two honest nodes are left.
  std::optional<BreakdownCheck> breakdown;
  bool complete() const { return byzantine.size() == requested; }
};

// Betweenness centrality (Brandes; unweighted shortest paths, each pair counted once), by
// position in topology.nodes().
std::vector<double> betweenness(const Topology& topology);

// Chooses up to `count` Byzantine ids with `strategy` (`seed`: kRandom's order): a node joins
// only if every honest neighbour stays within its budget (Topology::budgetOf). kCut needs
// kMaxSpectralNodes or fewer nodes (TopologyError otherwise).
Placement placeByzantine(const Topology& topology, std::size_t count, PlacementStrategy strategy,
                         std::uint64_t seed);

}  // namespace phalanx::topologies
