// Pre-aggregators (ALGORITHMS.md §2) that rewrite the set of vectors before a rule runs:
// nnm, clip:C, arc, bucketing:S. Internal to robust/; one instance per Aggregator, one thread.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/batch_ops.h"

namespace phalanx::robust {

// The rewritten vectors. Row 0 is still the pivot's (for bucketing: the pivot's bucket);
// members[i] lists the input rows that row i stands for, so reports map back.
struct Stage {
  std::vector<std::vector<float>> rows;
  std::vector<std::vector<std::size_t>> members;
  std::vector<double> weights;  // per row: the sum of its members' weights
};

class PreAggregator {
 public:
  virtual ~PreAggregator() = default;
  virtual Stage apply(kernels::Rows in, std::span<const double> weights, std::size_t b) = 0;
};

// Parses "nnm", "clip:2.5", "arc", "bucketing:2".
std::expected<std::unique_ptr<PreAggregator>, std::string> makePreAggregator(
    const std::string& spec, std::uint64_t seed);

}  // namespace phalanx::robust
