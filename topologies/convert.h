// Graph files of other tools, to and from phalanx topologies: DecentralizePy's two formats
// (first line n, then "a b" edge lines, or line i = the neighbours of node i) and plain edge
// lists ("a b" per line, '#' comments, ids as written).
#pragma once

#include <string>
#include <vector>

#include "topologies/topology.h"

namespace phalanx::topologies {

inline const std::vector<std::string> kGraphFormats{"decentralizepy-edges",
                                                    "decentralizepy-adjacency", "edgelist"};

struct GraphFile {
  std::vector<NodeId> ids;  // ascending
  std::vector<Edge> edges;
};

// Throws TopologyError naming `source` and the line.
GraphFile readGraphFile(const std::string& text, const std::string& format,
                        const std::string& source);

// DecentralizePy numbers nodes 0..n-1: the topology's ids must be exactly those (an error
// otherwise, rather than a silent renumbering).
std::string writeGraphFile(const Topology& topology, const std::string& format);

}  // namespace phalanx::topologies
