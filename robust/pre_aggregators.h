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
#include "robust/pre_spec.h"

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

// nnm over a fixed set of rows plus `copies` copies of one extra vector, for the opt_* line
// search against nnm+...: the rows' pairwise distances and the sums of each row's nearest rows
// do not change between the search's evaluations, so they are computed once; each extra then
// costs |rows| distances and one axpy per output row instead of a pairwise matrix and n - b
// axpys per row. Same neighbour sets as Nnm on rows followed by the copies (ties by index:
// a row comes before a copy at the same distance); the sums agree up to float rounding.
// The rows must be finite and their storage outlive this object; b < rows + copies.
class NnmWithCopies {
 public:
  NnmWithCopies(kernels::Rows rows, std::size_t copies, std::size_t b);
  // The nnm output: one row per input row, then one per copy (the copies' are identical and
  // share storage). Valid until the next call. The extra must be finite.
  std::vector<std::span<const float>> apply(std::span<const float> extra);

 private:
  // Σ of the first `count` rows in order_[k] (row k and its nearest), cached by (k, count).
  std::span<const float> nearestSum(std::size_t k, std::size_t count);

  std::vector<std::span<const float>> rows_;  // the caller's rows, not copied
  std::size_t copies_, keep_, dim_;
  std::vector<double> pair_;                     // rows x rows squared distances
  std::vector<std::vector<std::size_t>> order_;  // per row: itself, then the others by distance
  std::vector<std::vector<std::vector<float>>> sums_;  // [k][count], empty until needed
  std::size_t cached_floats_ = 0;
  std::vector<std::vector<float>> out_;  // rows..., then the copies' shared output
};

// The pre-aggregator `spec` names (robust/pre_spec.h); an error for a parameter out of range.
std::expected<std::unique_ptr<PreAggregator>, std::string> makePreAggregator(const PreSpec& spec,
                                                                             std::uint64_t seed);

}  // namespace phalanx::robust
