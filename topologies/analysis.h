// What `phalanx topology check` reports about a topology: degrees, connectivity, the spectral
// gap of its Metropolis mixing matrix, and the Byzantine budget each neighbourhood can bear.
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "topologies/topology.h"

namespace phalanx::topologies {

// Hops from `from` to every node it reaches, by breadth-first search, never through `avoid`
// (the node removed: what its neighbours can reach without it).
std::map<NodeId, std::size_t> hopsFrom(const Topology& topology, NodeId from,
                                       std::optional<NodeId> avoid = std::nullopt);

// The longest, over pairs of `node`'s neighbours, of the shortest path between the two that
// does not pass `node`, in edges (at least 1); the node count when `node`'s removal cuts two of
// them apart. Each search stops once it has found every neighbour: a local question on a large
// graph costs a few hops, not the graph.
std::size_t detourLength(const Topology& topology, NodeId node);

// detourLength of each node, measured the first time it is asked for. Shareable between threads
// (every peer of a simulation reads one: 4 bytes a node, not a table per peer): two threads that
// race on a node both measure it and store the same value.
class DetourLengths {
 public:
  explicit DetourLengths(const Topology& topology)
      : topology_(topology), lengths_(topology.size()) {}
  std::size_t operator()(NodeId node) const;  // throws TopologyError for an unknown id

 private:
  const Topology& topology_;
  mutable std::vector<std::atomic<std::uint32_t>> lengths_;  // by index; 0: not measured yet
};

// Connected components of the graph on nodes 0..n-1 (an isolated node is one component).
std::size_t componentCount(std::size_t n, const std::vector<Edge>& edges);

// W_ab = 1 / (1 + max(deg_a, deg_b)): the Metropolis weight of the edge between nodes a and b.
double metropolisWeight(const Topology& topology, NodeId a, NodeId b);

// The robust-gossip reference's weights (Gaucher, Dieuleveut, Hendrikx, ICML 2025): node i's
// edge to a node of `byzantine` weighs the largest Metropolis weight of i's honest edges (the
// attacker holds the heaviest edge); every other edge its Metropolis weight. 0 when i has no
// honest neighbour.
double byzantineMaxWeight(const Topology& topology, NodeId i, NodeId j,
                          const std::set<NodeId>& byzantine);

// W_ij = 1 / (1 + max(deg_i, deg_j)) on edges, W_ii = 1 - Σ_j W_ij (ALGORITHMS.md §2),
// indexed by position in topology.nodes(). Symmetric and doubly stochastic.
Eigen::MatrixXd metropolisWeights(const Topology& topology);

// The gossip step of Gaucher, Dieuleveut and Hendrikx (ICML 2025): η = 1/λ_max(L), L the
// Laplacian of the honest graph with the Metropolis weights (of the whole graph) on its edges,
// as honestFiedlerVector builds it. With it the honest part of a gossip step x ← x − ηLx is a
// contraction however the weights are spread. Needs 2 to kMaxSpectralNodes honest nodes and an
// edge between two of them; throws TopologyError otherwise.
double honestGossipStep(const Topology& topology, const std::set<NodeId>& byzantine);

// The Fiedler vector of the honest graph: the unit eigenvector of the second-smallest
// eigenvalue of L = D - A, A the Metropolis weights (of the whole graph) on edges between
// honest nodes, D its row sums. Indexed by position in topology.nodes(); Byzantine nodes get 0.
// Its sign is arbitrary (the spectral attack uses products v_i v_k). Needs 2 to
// kMaxSpectralNodes honest nodes; throws TopologyError otherwise.
std::vector<double> honestFiedlerVector(const Topology& topology,
                                        const std::set<NodeId>& byzantine);

// The most Byzantine neighbours one honest node has (b of the breakdown bound; what an
// omniscient attacker's search puts in the mix it attacks) and the lowest such node (0, 0 when
// no honest node has any). Any size of graph; ids outside the topology are ignored.
struct MostByzantineNeighbours {
  std::size_t count = 0;
  NodeId node = 0;
};
MostByzantineNeighbours mostByzantineNeighbours(const Topology& topology,
                                                const std::set<NodeId>& byzantine);

// The breakdown bound of Gaucher, Dieuleveut and Hendrikx (ICML 2025) for one Byzantine
// placement: on the class of graphs whose honest subgraph has algebraic connectivity at least
// mu and whose honest nodes have at most b Byzantine neighbours (unit weights), no gossip
// algorithm can be robust once 2b >= mu (docs/ALGORITHMS.md §2, "The breakdown bound").
struct BreakdownCheck {
  double honest_connectivity = 0;      // mu_2 of L = D - A on the honest subgraph (0: split)
  std::size_t byzantine_per_node = 0;  // b: the most Byzantine neighbours of one honest node
  NodeId worst_node = 0;               // an honest node with b of them
  // 2b / mu_2: at or above 1, beyond the breakdown bound (infinite when the honest graph is
  // split and b > 0; 0 when b = 0).
  double ratio = 0;
  bool beyond() const { return ratio >= 1.0; }
};
// Needs 2 to kMaxSpectralNodes honest nodes; throws TopologyError otherwise (and for an id the
// topology does not have).
BreakdownCheck breakdownCheck(const Topology& topology, const std::set<NodeId>& byzantine);

// The most Byzantine neighbours a node of degree `degree` can bear: its neighbourhood S (itself
// and its neighbours, deg + 1 vectors) needs an honest majority, 2b < deg + 1, for NNA, cwtm and
// the other rules of ALGORITHMS.md §2 to have a guarantee.
std::size_t tolerableBudget(std::size_t degree);

struct NodeCheck {
  NodeId id = 0;
  std::size_t degree = 0;
  std::size_t budget = 0;     // configured b_i
  std::size_t tolerable = 0;  // tolerableBudget(degree)
};

struct TopologyCheck {
  std::size_t nodes = 0, edges = 0;
  std::size_t min_degree = 0, max_degree = 0;
  double mean_degree = 0;
  std::size_t components = 0;
  // 1 - max(|λ2|, |λn|) of the Metropolis matrix: how fast gossip averages (0: never).
  // NaN when skipped for size (more than kMaxSpectralNodes nodes).
  double spectral_gap = 0;
  std::vector<NodeCheck> per_node;
  std::vector<std::string> warnings;  // disconnected graph, budgets that cannot hold, ...
  // What holds at a price: nodes with deg ≤ 2b (b > 0) close their rounds on every
  // neighbour, so a stalling neighbour holds each of their rounds to the deadline.
  std::vector<std::string> cautions;
};

inline constexpr std::size_t kMaxSpectralNodes = 2000;

// `byzantine`: ids known to be Byzantine, left out of the cautions (they concern honest peers).
TopologyCheck checkTopology(const Topology& topology, const std::set<NodeId>& byzantine = {});

}  // namespace phalanx::topologies
