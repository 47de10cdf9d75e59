// Seeded, disjoint, covering splits of a dataset's sample indices across n nodes:
// i.i.d. or heterogeneous by a Dirichlet(alpha) label split. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace phalanx::train {

// part[k] holds the sample indices of node k, sorted ascending.
using Partition = std::vector<std::vector<std::uint32_t>>;

// Shuffles 0..samples-1 with `seed` and cuts it into `nodes` parts whose sizes differ by <= 1.
Partition partitionIid(std::size_t samples, std::size_t nodes, std::uint64_t seed);

// For every class c, draws p_c ~ Dirichlet(alpha, ..., alpha) over the nodes and hands node k
// a share p_c[k] of class c's (shuffled) samples. Small alpha: each node sees few classes;
// large alpha: close to i.i.d. Redraws (from the same seeded stream) until every node holds at
// least `min_per_node` samples; throws std::invalid_argument when that cannot be reached.
Partition partitionDirichlet(std::span<const std::uint8_t> labels, std::size_t classes,
                             std::size_t nodes, double alpha, std::uint64_t seed,
                             std::size_t min_per_node = 1);

}  // namespace phalanx::train
