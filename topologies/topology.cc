#include "topologies/topology.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "base/yaml_fields.h"
#include "topologies/generators.h"

namespace phalanx::topologies {
namespace {

using base::YamlFields;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The generator section's parameters for `kind`; any other key in the section is an error.
GeneratorParams readGeneratorParams(YamlFields& g, GraphKind kind) {
  GeneratorParams p;
  for (const auto& name : generatorParamNames(kind)) {
    if (name == "p") g.number("p", p.p, 0.0, 1.0);
    if (name == "seed") g.integer("seed", p.seed, 0, UINT64_MAX);
    if (name == "degree") g.integer("degree", p.degree, 1, 1u << 20);
    if (name == "rows") g.integer("rows", p.rows, 1, 1u << 20);
    if (name == "bridges") g.integer("bridges", p.bridges, 1, 1u << 20);
    if (name == "path") g.integer("path", p.path, 0, 1u << 20);
    if (name == "links") g.integer("links", p.links, 1, 1u << 20);
    if (name == "byzantine") g.integer("byzantine", p.byzantine, 0, 1u << 20);
  }
  return p;
}

}  // namespace

Topology::Topology(std::vector<NodeSpec> nodes, std::vector<Edge> edges,
                   std::size_t byzantine_budget, std::string source)
    : nodes_(std::move(nodes)), budget_(byzantine_budget) {
  auto fail = [&](const std::string& what) {
    throw TopologyError(fmt::format("{}: {}", source, what));
  };
  std::sort(nodes_.begin(), nodes_.end(),
            [](const NodeSpec& a, const NodeSpec& b) { return a.id < b.id; });
  std::set<std::pair<std::string, std::uint16_t>> endpoints;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& n = nodes_[i];
    if (i > 0 && nodes_[i - 1].id == n.id) fail(fmt::format("nodes: id {} appears twice", n.id));
    if (n.host.empty()) fail(fmt::format("nodes: node {} has an empty host", n.id));
    if (n.region.find_first_of(" \t\n#") != std::string::npos)
      fail(fmt::format("nodes: node {}: region '{}' must be one word (links files name it)", n.id,
                       n.region));
    if (n.port == 0) fail(fmt::format("nodes: node {} needs a port (1-65535)", n.id));
    for (std::uint16_t port : {n.port, n.metrics_port}) {
      if (port != 0 && !endpoints.insert({n.host, port}).second) {
        fail(fmt::format("nodes: node {} reuses port {} on host {}", n.id, port, n.host));
      }
    }
  }
  adjacency_.resize(nodes_.size());
  std::set<Edge> unique;
  for (auto [a, b] : edges) {
    if (a == b) fail(fmt::format("edges: [{}, {}] joins a node to itself", a, b));
    if (!contains(a) || !contains(b)) {
      fail(fmt::format("edges: [{}, {}] names a node that is not in nodes", a, b));
    }
    unique.insert(a < b ? Edge{a, b} : Edge{b, a});
  }
  edges_.assign(unique.begin(), unique.end());
  for (const auto& [a, b] : edges_) {
    adjacency_[indexOf(a)].push_back(b);
    adjacency_[indexOf(b)].push_back(a);
  }
  for (auto& list : adjacency_) std::sort(list.begin(), list.end());
}

bool Topology::contains(NodeId id) const {
  if (id < nodes_.size() && nodes_[id].id == id) return true;  // ids 0..n-1, as indexOf
  return std::binary_search(nodes_.begin(), nodes_.end(), NodeSpec{.id = id},
                            [](const NodeSpec& a, const NodeSpec& b) { return a.id < b.id; });
}

std::size_t Topology::indexOf(NodeId id) const {
  // Generated topologies number their nodes 0..n-1: the id is the position.
  if (id < nodes_.size() && nodes_[id].id == id) return id;
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), id,
                             [](const NodeSpec& a, NodeId v) { return a.id < v; });
  if (it == nodes_.end() || it->id != id) {
    throw TopologyError(fmt::format("node {} is not in the topology", id));
  }
  return std::size_t(it - nodes_.begin());
}

const NodeSpec& Topology::node(NodeId id) const { return nodes_[indexOf(id)]; }

const std::vector<NodeId>& Topology::neighbours(NodeId id) const { return adjacency_[indexOf(id)]; }

std::size_t Topology::budgetOf(NodeId id) const {
  return node(id).byzantine_budget.value_or(budget_);
}

Topology parseTopology(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw TopologyError(fmt::format("{}: not valid YAML: {}", source, e.what()));
  }
  const YamlFields::Fail fail = [&source](const std::string& field, const std::string& problem) {
    throw TopologyError(fmt::format("{}: {}: {}", source, field, problem));
  };
  YamlFields top(root, "", fail);
  std::size_t budget = 0;
  top.integer("byzantine_budget", budget, 0, 1u << 20);

  std::vector<NodeSpec> nodes;
  for (auto& item : top.sectionList("nodes")) {
    NodeSpec n;
    std::uint64_t id = 0, port = 0, metrics_port = 0;
    if (!item.has("id")) fail(item.path() + ".id", "missing (every node needs an id)");
    item.integer("id", id, 0, UINT32_MAX);
    item.text("host", n.host);
    item.text("region", n.region);
    item.integer("port", port, 1, 65535);
    if (!item.has("port")) fail(item.path() + ".port", "missing (every node needs a port)");
    item.integer("metrics_port", metrics_port, 1, 65535);
    if (item.has("byzantine_budget")) {
      std::size_t b = 0;
      item.integer("byzantine_budget", b, 0, 1u << 20);
      n.byzantine_budget = b;
    }
    item.finish();
    n.id = NodeId(id);
    n.port = std::uint16_t(port);
    n.metrics_port = std::uint16_t(metrics_port);
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) fail("nodes", "missing or empty: list every peer as {id, host, port}");

  std::vector<Edge> edges;
  const bool has_edges = top.has("edges"), has_generator = top.has("generator");
  if (has_edges == has_generator) {
    fail(has_edges ? "generator" : "edges",
         "give exactly one of `edges: [[a, b], ...]` and `generator: {kind: ...}`");
  }
  if (has_edges) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
    top.integerPairs("edges", pairs, UINT32_MAX);
    for (const auto& [a, b] : pairs) edges.emplace_back(NodeId(a), NodeId(b));
  } else {
    YamlFields g = top.section("generator");
    std::string name;
    g.choice("kind", name, kGraphKinds.names());
    if (name.empty()) fail(g.path() + ".kind", "missing");
    const GraphKind kind = *kGraphKinds.parse(name);
    const GeneratorParams params = readGeneratorParams(g, kind);
    g.finish();
    auto generated = generateEdges(kind, nodes.size(), params);
    if (!generated) fail(g.path(), generated.error());
    // The generator numbers nodes 0..n-1; they stand for the listed nodes in id order.
    std::vector<NodeId> ids;
    for (const auto& n : nodes) ids.push_back(n.id);
    std::sort(ids.begin(), ids.end());
    for (const auto& [a, b] : *generated) edges.emplace_back(ids[a], ids[b]);
    // What the graph implies for a node's budget, where the file gives none.
    const auto budgets = generatedBudgets(kind, nodes.size(), params);
    for (auto& n : nodes) {
      const std::size_t at =
          std::size_t(std::lower_bound(ids.begin(), ids.end(), n.id) - ids.begin());
      if (!n.byzantine_budget) n.byzantine_budget = budgets[at];
    }
  }
  top.finish();
  return Topology(std::move(nodes), std::move(edges), budget, source);
}

std::optional<NodeId> starCentre(const Topology& t) {
  if (t.size() < 2) return std::nullopt;
  for (const auto& n : t.nodes()) {
    if (t.degree(n.id) != t.size() - 1) continue;
    const bool leaves = std::all_of(t.nodes().begin(), t.nodes().end(), [&](const NodeSpec& m) {
      return m.id == n.id || t.degree(m.id) == 1;
    });
    return leaves ? std::optional<NodeId>(n.id) : std::nullopt;
  }
  return std::nullopt;
}

Topology loadTopology(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TopologyError(fmt::format("{}: cannot read the topology file", path));
  std::stringstream text;
  text << in.rdbuf();
  return parseTopology(text.str(), path);
}

std::string toYaml(const Topology& t, const std::string& comment) {
  std::string out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out += "# " + line + "\n";
  out += fmt::format("byzantine_budget: {}\nnodes:\n", t.defaultBudget());
  for (const auto& n : t.nodes()) {
    out += fmt::format("  - {{id: {}, host: {}, port: {}", n.id, quoted(n.host), n.port);
    if (n.metrics_port != 0) out += fmt::format(", metrics_port: {}", n.metrics_port);
    if (n.byzantine_budget) out += fmt::format(", byzantine_budget: {}", *n.byzantine_budget);
    if (!n.region.empty()) out += fmt::format(", region: {}", quoted(n.region));
    out += "}\n";
  }
  out += "edges: [";
  for (std::size_t i = 0; i < t.edges().size(); ++i) {
    out += fmt::format("{}{}[{}, {}]", i == 0 ? "" : ",", i % 8 == 0 ? "\n  " : " ",
                       t.edges()[i].first, t.edges()[i].second);
  }
  out += t.edges().empty() ? "]\n" : "\n]\n";
  return out;
}

NodeSpec numberedNode(NodeId id, const Addressing& a) {
  if (a.base_port == 0 || std::size_t(a.base_port) + id > 65535 ||
      std::size_t(a.metrics_base_port) + id > 65535) {
    throw TopologyError(fmt::format("node {}: ports {}+{} and {}+{} must stay within 1-65535", id,
                                    a.base_port, id, a.metrics_base_port, id));
  }
  return {.id = id,
          .host = a.host,
          .port = std::uint16_t(a.base_port + id),
          .metrics_port = std::uint16_t(a.metrics_base_port + id)};
}

void assignRegions(std::vector<NodeSpec>& nodes, std::size_t regions) {
  if (regions == 0) return;
  if (regions > nodes.size()) {
    throw TopologyError(
        fmt::format("--regions {}: more regions than the {} nodes", regions, nodes.size()));
  }
  for (std::size_t k = 0; k < nodes.size(); ++k)
    nodes[k].region = fmt::format("r{}", k * regions / nodes.size());
}

std::vector<NodeSpec> numberedNodes(std::size_t n, const Addressing& a) {
  std::vector<NodeSpec> nodes;
  for (std::size_t k = 0; k < n; ++k) nodes.push_back(numberedNode(NodeId(k), a));
  return nodes;
}

}  // namespace phalanx::topologies
