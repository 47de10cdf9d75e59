// A cluster's topology: its peers (id, address, ports, Byzantine budget) and the undirected
// graph of who gossips with whom, read from and written to the YAML files of DESIGN.md "Files".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace phalanx::topologies {

// Bad topology input; the message names the file and the field.
class TopologyError : public base::ErrorOf<base::ErrorKind::kTopology> {
 public:
  using ErrorOf::ErrorOf;
};

using NodeId = std::uint32_t;
using Edge = std::pair<NodeId, NodeId>;  // first < second

struct NodeSpec {
  NodeId id = 0;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::uint16_t metrics_port = 0;
  std::optional<std::size_t> byzantine_budget;  // overrides the topology's default
  // Where the node sits in a WAN ("" none): `phalanx simulate --links` gives edges inside one
  // region and edges across two their own link classes (node/simulation.h, parseLinks).
  std::string region;
};

class Topology {
 public:
  // Validates: ids unique, edges between known ids, no self-loops (duplicates are merged),
  // ports unique per host. Throws TopologyError naming `source`.
  Topology(std::vector<NodeSpec> nodes, std::vector<Edge> edges, std::size_t byzantine_budget,
           std::string source = "topology");

  const std::vector<NodeSpec>& nodes() const { return nodes_; }  // sorted by id
  const std::vector<Edge>& edges() const { return edges_; }      // sorted, unique
  std::size_t size() const { return nodes_.size(); }
  std::size_t defaultBudget() const { return budget_; }

  bool contains(NodeId id) const;
  const NodeSpec& node(NodeId id) const;                   // throws TopologyError if unknown
  std::size_t indexOf(NodeId id) const;                    // position in nodes()
  const std::vector<NodeId>& neighbours(NodeId id) const;  // ascending
  std::size_t degree(NodeId id) const { return neighbours(id).size(); }
  std::size_t budgetOf(NodeId id) const;  // the node's override, else the default

 private:
  std::vector<NodeSpec> nodes_;
  std::vector<Edge> edges_;
  std::vector<std::vector<NodeId>> adjacency_;  // by index
  std::size_t budget_ = 0;
};

// The centre of a star: the node joined to every other, each other joined only to it (the
// lowest id when there are two nodes); nullopt for any other graph.
std::optional<NodeId> starCentre(const Topology& topology);

// Parses YAML text; `source` names the file in errors. The file gives either `edges` or a
// `generator` section (kind and its parameters, see generators.h) applied to the nodes in id
// order.
Topology parseTopology(const std::string& yaml_text, const std::string& source);
Topology loadTopology(const std::string& path);  // throws TopologyError (also: unreadable file)
// YAML that parseTopology reads back to the same topology; `comment` lines go on top.
std::string toYaml(const Topology& topology, const std::string& comment = "");

// Addresses for generated topologies: node k listens on base_port + k, serves metrics on
// metrics_base_port + k, at `host`.
struct Addressing {
  std::string host = "127.0.0.1";
  std::uint16_t base_port = 7000;
  std::uint16_t metrics_base_port = 9000;
};
// Throws TopologyError when a port would leave 1-65535.
NodeSpec numberedNode(NodeId id, const Addressing& addressing);
std::vector<NodeSpec> numberedNodes(std::size_t n, const Addressing& addressing);  // ids 0..n-1
// Regions r0 .. r{regions-1} in contiguous blocks of the list (node k of n in r{k*regions/n}):
// neighbouring ids share a region, as a datacentre's machines share a rack. 0: none. Throws
// TopologyError when there are more regions than nodes.
void assignRegions(std::vector<NodeSpec>& nodes, std::size_t regions);

}  // namespace phalanx::topologies
