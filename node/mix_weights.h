// The weight a peer gives a neighbour's row in its mix (mixing.weights, ALGORITHMS.md §2): one
// home for the honest peers' rule and for the attackers that model it.
#pragma once

#include <cstdint>
#include <set>

#include "node/config.h"
#include "topologies/analysis.h"
#include "topologies/topology.h"

namespace phalanx::node {

// W_ij under `scheme`; `byzantine`: the ids the run declares Byzantine (byzantine_max only).
inline double mixWeight(MixingWeights scheme, const topologies::Topology& topology, std::uint32_t i,
                        std::uint32_t j, const std::set<std::uint32_t>& byzantine) {
  return scheme == MixingWeights::kByzantineMax
             ? topologies::byzantineMaxWeight(topology, i, j, byzantine)
             : topologies::metropolisWeight(topology, i, j);
}

}  // namespace phalanx::node
