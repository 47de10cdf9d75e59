#include "topologies/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <utility>

namespace phalanx::topologies {
namespace {

// Whether `candidate` can turn Byzantine: every honest neighbour keeps at most its budget.
bool fits(const Topology& t, NodeId candidate, const std::set<NodeId>& byzantine) {
  for (const NodeId h : t.neighbours(candidate)) {
    if (byzantine.contains(h)) continue;
    std::size_t count = 1;  // the candidate
    for (const NodeId n : t.neighbours(h)) count += byzantine.contains(n) ? 1 : 0;
    if (count > t.budgetOf(h)) return false;
  }
  return true;
}

// How many honest nodes have a Byzantine neighbour: the honest peers the coalition can speak to.
std::size_t reach(const Topology& t, const std::set<NodeId>& byzantine) {
  std::size_t reached = 0;
  for (const auto& node : t.nodes()) {
    if (byzantine.contains(node.id)) continue;
    if (std::ranges::any_of(t.neighbours(node.id), [&](NodeId n) { return byzantine.contains(n); }))
      ++reached;
  }
  return reached;
}

// Adds the fitting candidate with the highest key(trial set, candidate) — pairs compared in
// order, the lowest id on a tie — one at a time, until `count` are placed, none fits, or only
// `keep_honest` honest nodes would be left.
template <class Key>
void addGreedily(const Topology& t, const std::vector<NodeId>& ids, std::size_t count,
                 std::size_t keep_honest, std::set<NodeId>& byzantine, Key key) {
  while (byzantine.size() < count && t.size() - byzantine.size() > keep_honest) {
    std::optional<NodeId> best;
    std::pair<double, double> best_key;
    for (const NodeId id : ids) {
      if (byzantine.contains(id) || !fits(t, id, byzantine)) continue;
      std::set<NodeId> trial = byzantine;
      trial.insert(id);
      const std::pair<double, double> k = key(trial, id);
      if (!best || k > best_key) {
        best = id;
        best_key = k;
      }
    }
    if (!best) break;
    byzantine.insert(*best);
  }
}

std::optional<BreakdownCheck> breakdownOf(const Topology& t, const std::set<NodeId>& byzantine) {
  if (t.size() - byzantine.size() < 2 || t.size() > kMaxSpectralNodes) return std::nullopt;
  return breakdownCheck(t, byzantine);
}

}  // namespace

std::vector<double> betweenness(const Topology& topology) {
  const std::size_t n = topology.size();
  std::vector<double> centrality(n, 0.0);
  for (std::size_t s = 0; s < n; ++s) {
    // Brandes: shortest-path counts from s, then dependencies accumulated backwards.
    std::vector<std::vector<std::size_t>> before(n);
    std::vector<double> paths(n, 0.0), dependency(n, 0.0);
    std::vector<long> hops(n, -1);
    std::vector<std::size_t> order;
    std::deque<std::size_t> queue{s};
    paths[s] = 1;
    hops[s] = 0;
    while (!queue.empty()) {
      const std::size_t v = queue.front();
      queue.pop_front();
      order.push_back(v);
      for (const NodeId id : topology.neighbours(topology.nodes()[v].id)) {
        const std::size_t w = topology.indexOf(id);
        if (hops[w] < 0) {
          hops[w] = hops[v] + 1;
          queue.push_back(w);
        }
        if (hops[w] == hops[v] + 1) {
          paths[w] += paths[v];
          before[w].push_back(v);
        }
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::size_t w = *it;
      for (const std::size_t v : before[w])
        dependency[v] += paths[v] / paths[w] * (1 + dependency[w]);
      if (w != s) centrality[w] += dependency[w];
    }
  }
  for (double& c : centrality) c /= 2;  // each unordered pair was counted from both ends
  return centrality;
}

Placement placeByzantine(const Topology& topology, std::size_t count, PlacementStrategy strategy,
                         std::uint64_t seed) {
  Placement out;
  out.requested = count;
  std::set<NodeId> byzantine;
  std::vector<NodeId> ids;
  for (const auto& node : topology.nodes()) ids.push_back(node.id);
  if (strategy == PlacementStrategy::kCut) {
    if (topology.size() > kMaxSpectralNodes) {
      throw TopologyError(
          fmt::format("place --strategy cut: {} nodes, at most {} (one "
                      "eigenvalue problem per candidate and step)",
                      topology.size(), kMaxSpectralNodes));
    }
    // The candidate whose turn leaves the honest graph least connected for its b: the highest
    // 2b / mu_2, then the lowest mu_2; breakdownCheck needs two honest nodes left.
    addGreedily(topology, ids, count, 2, byzantine, [&](const std::set<NodeId>& trial, NodeId) {
      const BreakdownCheck c = breakdownCheck(topology, trial);
      return std::pair{c.ratio, -c.honest_connectivity};
    });
  } else if (strategy == PlacementStrategy::kMaxSpan) {
    // Span first (the honest nodes a coalition reaches bound the models it can bias), centrality
    // to break ties: among candidates reaching as many, the one on the most shortest paths.
    const std::vector<double> c = betweenness(topology);
    addGreedily(topology, ids, count, 0, byzantine, [&](const std::set<NodeId>& trial, NodeId id) {
      return std::pair{double(reach(topology, trial)), c[topology.indexOf(id)]};
    });
  } else {
    if (strategy == PlacementStrategy::kRandom) {
      std::mt19937_64 rng(seed);
      std::shuffle(ids.begin(), ids.end(), rng);
    } else {
      const std::vector<double> c = betweenness(topology);
      std::stable_sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
        const std::size_t ia = topology.indexOf(a), ib = topology.indexOf(b);
        if (c[ia] != c[ib]) return c[ia] > c[ib];
        if (topology.degree(a) != topology.degree(b))
          return topology.degree(a) > topology.degree(b);
        return a < b;
      });
    }
    for (const NodeId id : ids) {
      if (byzantine.size() == count) break;
      if (fits(topology, id, byzantine)) byzantine.insert(id);
    }
  }
  out.byzantine.assign(byzantine.begin(), byzantine.end());
  out.breakdown = breakdownOf(topology, byzantine);
  return out;
}

}  // namespace phalanx::topologies
