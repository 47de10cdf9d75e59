#include "topologies/analysis.h"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <string_view>

namespace phalanx::topologies {

std::map<NodeId, std::size_t> hopsFrom(const Topology& topology, NodeId from,
                                       std::optional<NodeId> avoid) {
  std::map<NodeId, std::size_t> hops{{from, 0}};
  std::deque<NodeId> queue{from};
  while (!queue.empty()) {
    const NodeId u = queue.front();
    queue.pop_front();
    for (const NodeId v : topology.neighbours(u)) {
      if (v == avoid) continue;
      if (hops.emplace(v, hops[u] + 1).second) queue.push_back(v);
    }
  }
  return hops;
}
std::size_t detourLength(const Topology& topology, NodeId node) {
  const std::vector<NodeId>& around = topology.neighbours(node);
  constexpr std::size_t kUnseen = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> hops(topology.size(), kUnseen);
  std::vector<std::size_t> touched;
  std::size_t longest = 1;
  for (const NodeId from : around) {
    for (const std::size_t i : touched) hops[i] = kUnseen;
    touched.clear();
    std::size_t found = 0, farthest = 0;
    const auto visit = [&](NodeId v, std::size_t h) {
      const std::size_t i = topology.indexOf(v);
      if (hops[i] != kUnseen) return false;
      hops[i] = h;
      touched.push_back(i);
      if (std::binary_search(around.begin(), around.end(), v)) {
        ++found;
        farthest = h;  // breadth-first: the last one found is the farthest
      }
      return true;
    };
    std::deque<NodeId> queue{from};
    visit(from, 0);
    while (!queue.empty() && found < around.size()) {
      const NodeId u = queue.front();
      queue.pop_front();
      const std::size_t next = hops[topology.indexOf(u)] + 1;
      for (const NodeId v : topology.neighbours(u)) {
        if (v != node && visit(v, next)) queue.push_back(v);
      }
    }
    longest = std::max(longest, found < around.size() ? topology.size() : farthest);
  }
  return longest;
}

namespace {

std::size_t root(std::vector<std::size_t>& parent, std::size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

std::size_t DetourLengths::operator()(NodeId node) const {
  std::atomic<std::uint32_t>& slot = lengths_[topology_.indexOf(node)];
  std::uint32_t length = slot.load(std::memory_order_relaxed);
  if (length == 0) {  // at least 1 once measured
    length = std::uint32_t(std::min<std::size_t>(detourLength(topology_, node), UINT32_MAX));
    slot.store(length, std::memory_order_relaxed);
  }
  return length;
}

std::size_t componentCount(std::size_t n, const std::vector<Edge>& edges) {
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::size_t components = n;
  for (const auto& [a, b] : edges) {
    const std::size_t ra = root(parent, a), rb = root(parent, b);
    if (ra != rb) {
      parent[ra] = rb;
      --components;
    }
  }
  return components;
}

double metropolisWeight(const Topology& topology, NodeId a, NodeId b) {
  return 1.0 / (1.0 + double(std::max(topology.degree(a), topology.degree(b))));
}

double byzantineMaxWeight(const Topology& topology, NodeId i, NodeId j,
                          const std::set<NodeId>& byzantine) {
  if (!byzantine.contains(j)) return metropolisWeight(topology, i, j);
  double largest = 0;
  for (const NodeId k : topology.neighbours(i)) {
    if (!byzantine.contains(k)) largest = std::max(largest, metropolisWeight(topology, i, k));
  }
  return largest;
}

Eigen::MatrixXd metropolisWeights(const Topology& topology) {
  const std::size_t n = topology.size();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(Eigen::Index(n), Eigen::Index(n));
  for (const auto& [a, b] : topology.edges()) {
    const auto i = Eigen::Index(topology.indexOf(a)), j = Eigen::Index(topology.indexOf(b));
    w(i, j) = w(j, i) = metropolisWeight(topology, a, b);
  }
  for (Eigen::Index i = 0; i < Eigen::Index(n); ++i) w(i, i) = 1.0 - w.row(i).sum();
  return w;
}

namespace {

// The Laplacian L = D - A of the honest subgraph, A(i, j) = weight(i, j) on honest–honest edges
// (positions in nodes()), rows in the order of `honest` (the honest nodes' positions). `what`
// names the caller in the error for fewer than 2 or more than kMaxSpectralNodes honest nodes.
struct HonestLaplacian {
  std::vector<std::size_t> honest;
  Eigen::MatrixXd laplacian;
};
template <typename Weight>
HonestLaplacian honestLaplacian(const Topology& topology, const std::set<NodeId>& byzantine,
                                std::string_view what, Weight weight) {
  HonestLaplacian out;
  std::vector<Eigen::Index> slot(topology.size(), -1);
  for (std::size_t i = 0; i < topology.size(); ++i) {
    if (byzantine.contains(topology.nodes()[i].id)) continue;
    slot[i] = Eigen::Index(out.honest.size());
    out.honest.push_back(i);
  }
  const std::size_t h = out.honest.size();
  if (h < 2 || h > kMaxSpectralNodes) {
    throw TopologyError(fmt::format("{} needs 2 to {} honest nodes, the topology has {}", what,
                                    kMaxSpectralNodes, h));
  }
  out.laplacian = Eigen::MatrixXd::Zero(Eigen::Index(h), Eigen::Index(h));
  for (const auto& [a, b] : topology.edges()) {
    const std::size_t i = topology.indexOf(a), j = topology.indexOf(b);
    if (slot[i] < 0 || slot[j] < 0) continue;
    const double wij = weight(i, j);
    out.laplacian(slot[i], slot[j]) -= wij;
    out.laplacian(slot[j], slot[i]) -= wij;
    out.laplacian(slot[i], slot[i]) += wij;
    out.laplacian(slot[j], slot[j]) += wij;
  }
  return out;
}

}  // namespace

std::vector<double> honestFiedlerVector(const Topology& topology,
                                        const std::set<NodeId>& byzantine) {
  const Eigen::MatrixXd w = metropolisWeights(topology);
  const HonestLaplacian l = honestLaplacian(
      topology, byzantine, "the Fiedler vector",
      [&](std::size_t i, std::size_t j) { return w(Eigen::Index(i), Eigen::Index(j)); });
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(l.laplacian);
  const Eigen::VectorXd v = solver.eigenvectors().col(1).normalized();  // eigenvalues ascend
  std::vector<double> out(topology.size(), 0.0);
  for (std::size_t k = 0; k < l.honest.size(); ++k) out[l.honest[k]] = v(Eigen::Index(k));
  return out;
}

double honestGossipStep(const Topology& topology, const std::set<NodeId>& byzantine) {
  const Eigen::MatrixXd w = metropolisWeights(topology);
  const HonestLaplacian l = honestLaplacian(
      topology, byzantine, "mixing.step: auto",
      [&](std::size_t i, std::size_t j) { return w(Eigen::Index(i), Eigen::Index(j)); });
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(l.laplacian, Eigen::EigenvaluesOnly);
  const double largest = solver.eigenvalues()(solver.eigenvalues().size() - 1);
  if (!(largest > 0)) {
    throw TopologyError("mixing.step: auto: the honest graph has no edge (its Laplacian is 0)");
  }
  return 1.0 / largest;
}

BreakdownCheck breakdownCheck(const Topology& topology, const std::set<NodeId>& byzantine) {
  for (const NodeId id : byzantine) {
    if (!topology.contains(id)) {
      throw TopologyError(fmt::format("byzantine id {} is not a node of the topology", id));
    }
  }
  // Unit weights, as in the paper's graph class: b counts neighbours, mu_2 is that of the
  // plain Laplacian; the ratio 2b / mu_2 does not change if every weight is scaled alike.
  const HonestLaplacian l = honestLaplacian(topology, byzantine, "the breakdown check",
                                            [](std::size_t, std::size_t) { return 1.0; });
  BreakdownCheck out;
  const MostByzantineNeighbours most = mostByzantineNeighbours(topology, byzantine);
  out.byzantine_per_node = most.count;
  out.worst_node = most.node;
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(l.laplacian, Eigen::EigenvaluesOnly);
  // Rounding leaves a split graph's second eigenvalue near 0, not at it.
  const auto& eig = solver.eigenvalues();
  const double mu = eig(1);
  out.honest_connectivity = mu > 1e-9 * std::max(1.0, eig(eig.size() - 1)) ? mu : 0.0;
  const double b = double(out.byzantine_per_node);
  out.ratio = b == 0                         ? 0.0
              : out.honest_connectivity == 0 ? std::numeric_limits<double>::infinity()
                                             : 2 * b / out.honest_connectivity;
  return out;
}

MostByzantineNeighbours mostByzantineNeighbours(const Topology& topology,
                                                const std::set<NodeId>& byzantine) {
  MostByzantineNeighbours out;
  for (const NodeSpec& node : topology.nodes()) {
    if (byzantine.contains(node.id)) continue;
    std::size_t count = 0;
    for (const NodeId n : topology.neighbours(node.id)) count += byzantine.contains(n) ? 1 : 0;
    if (count > out.count) out = {count, node.id};
  }
  return out;
}

std::size_t tolerableBudget(std::size_t degree) { return degree / 2; }

TopologyCheck checkTopology(const Topology& topology, const std::set<NodeId>& byzantine) {
  TopologyCheck c;
  std::string paced;  // honest ids with deg ≤ 2b
  std::size_t paced_count = 0;
  c.nodes = topology.size();
  c.edges = topology.edges().size();
  c.min_degree = std::numeric_limits<std::size_t>::max();
  for (const auto& node : topology.nodes()) {
    NodeCheck nc{node.id, topology.degree(node.id), topology.budgetOf(node.id), 0};
    nc.tolerable = tolerableBudget(nc.degree);
    c.min_degree = std::min(c.min_degree, nc.degree);
    c.max_degree = std::max(c.max_degree, nc.degree);
    if (nc.degree == 0) {
      c.warnings.push_back(
          fmt::format("node {} has no neighbours: it can only train alone", node.id));
    } else if (nc.budget > nc.tolerable) {
      c.warnings.push_back(fmt::format(
          "node {}: byzantine budget {} cannot hold with {} neighbours (at most {}: the "
          "neighbourhood of {} vectors needs an honest majority)",
          node.id, nc.budget, nc.degree, nc.tolerable, nc.degree + 1));
    }
    if (nc.budget > 0 && nc.degree > 0 && nc.degree <= 2 * nc.budget &&
        !byzantine.contains(node.id)) {
      if (++paced_count <= 16) paced += fmt::format("{}{}", paced.empty() ? "" : ", ", node.id);
    }
    c.per_node.push_back(nc);
  }
  if (paced_count > 0) {
    if (paced_count > 16) paced += fmt::format(" and {} more", paced_count - 16);
    c.cautions.push_back(fmt::format(
        "node{} {} {} at most twice {} byzantine budget in neighbours (deg <= 2b): {} quorum is "
        "every neighbour, so one that stalls holds each of {} rounds to the deadline, which "
        "learns the fastest deg - b arrivals' pace (docs/PROTOCOL.md \"Closing a round\")",
        paced_count == 1 ? "" : "s", paced, paced_count == 1 ? "has" : "have",
        paced_count == 1 ? "its" : "their", paced_count == 1 ? "its" : "their",
        paced_count == 1 ? "its" : "their"));
  }
  if (c.nodes == 0) c.min_degree = 0;
  c.mean_degree = c.nodes == 0 ? 0.0 : 2.0 * double(c.edges) / double(c.nodes);

  std::vector<Edge> by_index;
  for (const auto& [a, b] : topology.edges()) {
    by_index.emplace_back(NodeId(topology.indexOf(a)), NodeId(topology.indexOf(b)));
  }
  c.components = componentCount(c.nodes, by_index);
  if (c.components > 1) {
    c.warnings.push_back(fmt::format(
        "the graph falls into {} disconnected parts: their models will never agree", c.components));
  }

  if (c.nodes > kMaxSpectralNodes) {
    c.spectral_gap = std::numeric_limits<double>::quiet_NaN();
  } else if (c.nodes <= 1) {
    c.spectral_gap = 1.0;
  } else {
    // W is symmetric, so its eigenvalues are real; the largest is 1 (W is stochastic).
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(metropolisWeights(topology),
                                                                Eigen::EigenvaluesOnly);
    const auto& eig = solver.eigenvalues();  // ascending
    const double second = std::max(std::abs(eig(eig.size() - 2)), std::abs(eig(0)));
    c.spectral_gap = std::max(0.0, 1.0 - second);
  }
  return c;
}

}  // namespace phalanx::topologies
