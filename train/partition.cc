#include "train/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace phalanx::train {
namespace {

void sortParts(Partition& parts) {
  for (auto& p : parts) std::sort(p.begin(), p.end());
}

}  // namespace

Partition partitionIid(std::size_t samples, std::size_t nodes, std::uint64_t seed) {
  if (nodes == 0) throw std::invalid_argument("partition: need at least one node");
  std::vector<std::uint32_t> order(samples);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  Partition parts(nodes);
  const std::size_t base = samples / nodes, extra = samples % nodes;
  std::size_t at = 0;
  for (std::size_t k = 0; k < nodes; ++k) {
    const std::size_t take = base + (k < extra ? 1 : 0);
    parts[k].assign(order.begin() + std::ptrdiff_t(at), order.begin() + std::ptrdiff_t(at + take));
    at += take;
  }
  sortParts(parts);
  return parts;
}

Partition partitionDirichlet(std::span<const std::uint8_t> labels, std::size_t classes,
                             std::size_t nodes, double alpha, std::uint64_t seed,
                             std::size_t min_per_node) {
  if (nodes == 0) throw std::invalid_argument("partition: need at least one node");
  if (!(alpha > 0)) throw std::invalid_argument("partition: dirichlet alpha must be > 0");
  if (nodes * min_per_node > labels.size()) {
    throw std::invalid_argument(fmt::format("partition: {} samples cannot give {} nodes {} each",
                                            labels.size(), nodes, min_per_node));
  }
  std::vector<std::vector<std::uint32_t>> by_class(classes);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= classes) throw std::invalid_argument("partition: label out of range");
    by_class[labels[i]].push_back(std::uint32_t(i));
  }
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gamma(alpha, 1.0);
  constexpr int kAttempts = 1000;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Partition parts(nodes);
    for (auto idx : by_class) {  // a copy: each attempt shuffles afresh
      std::shuffle(idx.begin(), idx.end(), rng);
      // Dirichlet draw as normalized Gamma(alpha) variables.
      std::vector<double> p(nodes);
      double total = 0;
      for (double& v : p) total += (v = gamma(rng));
      if (!(total > 0)) continue;  // all-zero draw (tiny alpha underflow): this class goes unused
      // Cut points from cumulative shares, so every sample goes to exactly one node.
      double cumulative = 0;
      std::size_t at = 0;
      for (std::size_t k = 0; k < nodes; ++k) {
        cumulative += p[k] / total;
        const std::size_t end =
            k + 1 == nodes ? idx.size()
                           : std::min(idx.size(), std::size_t(cumulative * double(idx.size())));
        if (end > at) {
          parts[k].insert(parts[k].end(), idx.begin() + std::ptrdiff_t(at),
                          idx.begin() + std::ptrdiff_t(end));
          at = end;
        }
      }
    }
    const bool covered = std::all_of(parts.begin(), parts.end(),
                                     [&](const auto& p) { return p.size() >= min_per_node; });
    if (covered) {
      sortParts(parts);
      return parts;
    }
  }
  throw std::invalid_argument(fmt::format(
      "partition: dirichlet(alpha={}) left a node with fewer than {} samples after {} draws; "
      "raise alpha or use fewer nodes",
      alpha, min_per_node, kAttempts));
}

}  // namespace phalanx::train
