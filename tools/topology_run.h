// The work of `phalanx topology gen|check|convert|place`: make topology files, judge them
// (connectivity, spectral gap, the Byzantine budget each neighbourhood can bear), move graphs
// between phalanx and DecentralizePy or plain edge lists, and place Byzantine peers where an
// attacker would. Each returns an exit code.
#pragma once

#include <cstddef>
#include <string>

#include "topologies/generators.h"
#include "topologies/placement.h"
#include "topologies/topology.h"

namespace phalanx::tools {

struct TopologyOptions {
  // gen
  topologies::GraphKind kind = topologies::GraphKind::kRing;
  std::size_t n = 0;
  topologies::Addressing addressing;
  std::size_t budget = 0;
  std::size_t regions = 0;
  topologies::GeneratorParams params;
  // check
  std::string file;
  bool json = false;
  std::string byzantine;  // check --byzantine: the placement whose breakdown bound to report
  // convert
  std::string from = "yaml", to = "yaml";
  // place (its --seed is params.seed)
  std::size_t byzantine_count = 0;
  topologies::PlacementStrategy strategy = topologies::PlacementStrategy::kRandom;
};

// Prints a generated topology as YAML, its regenerating command line as the first comment.
int runTopologyGen(const TopologyOptions& o);
// Prints the check of o.file (exit 1 when it warns).
int runTopologyCheck(const TopologyOptions& o);
// Prints o.file converted from o.from to o.to.
int runTopologyConvert(const TopologyOptions& o);
// Prints the ids o.strategy places in o.file (comma-separated, or --json with the placement's
// breakdown check); exit 1 when the budgets let fewer than o.byzantine_count in.
int runTopologyPlace(const TopologyOptions& o);

}  // namespace phalanx::tools
