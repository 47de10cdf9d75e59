// Batched hot loops over a set of equal-length float vectors ("rows"): distances and weighted
// sums, for the aggregators in robust/ (coordinate-wise order statistics: order_stats.h). CPU
// reference, parallel over coordinate blocks with OpenMP. Pure; safe from any thread on disjoint
// outputs. Distances are summed in float over runs of 4096 coordinates and in double across runs
// (relative error about 1e-6 vectorized, below 1e-5 without SIMD); a run that overflows float
// is redone in double, so finite rows (even near FLT_MAX) give finite distances and NaN/Inf
// rows, and only they, give non-finite ones. Rows are processed four at a time, so the order
// of terms depends on a row's position.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace phalanx::kernels {

// A set of vectors of one length; each span is caller-owned.
using Rows = std::span<const std::span<const float>>;

// The length every row has (0 for no rows); aborts when they differ.
std::size_t commonLength(Rows rows);

// out[k] = ‖rows[k] - center‖². A row with NaN/Inf gives a non-finite value.
void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out);

// The same distances, and in the same pass sum[i] = Σ_k rows[k][i] (float accumulation), so
// a rule that needs both reads every row once. A non-finite row makes the sum non-finite.
// Returns ‖center‖² (free: the center's block is in cache while the rows stream past).
double squaredDistancesAndSum(std::span<const float> center, Rows rows, std::span<double> out,
                              std::span<float> sum);

// What squaredDistancesAndSum (or squaredDistancesTo) measured of a center and the leading rows
// of a set that comes back with only its last rows changed (an attacker's line search: its
// honest rows, then copies of each candidate): their distances, and for the sum ‖center‖² and
// their partial sum. The first call with it fills it; later calls with the same center and
// leading buffers read only the rows after them. Keyed by buffers: whoever holds one promises
// those buffers keep their contents.
class RowPrefix {
 public:
  // The first `unchanged` rows of every call stay the same.
  explicit RowPrefix(std::size_t unchanged) : unchanged_(unchanged) {}

 private:
  friend double squaredDistancesAndSum(std::span<const float>, Rows, std::span<double>,
                                       std::span<float>, RowPrefix*);
  friend void squaredDistancesTo(std::span<const float>, Rows, std::span<double>, RowPrefix*);
  // The leading rows one pass measured (a whole number of groups) and their distances.
  struct Held {
    const float* center = nullptr;
    std::vector<const float*> rows;
    std::vector<double> distances;
    bool holds(std::span<const float> center, Rows leading) const;
    void keep(std::span<const float> center, Rows leading);
  };
  // The leading rows a call of n rows holds: whole groups only, since a row's distance and its
  // place in the sum depend on whether it is summed in a group of four or alone.
  std::size_t held(std::size_t rows) const;
  std::size_t unchanged_;
  Held summed_;  // squaredDistancesAndSum's
  Held plain_;   // squaredDistancesTo's: its own pass, whose distances it gives bit for bit
  double center_norm_ = 0;
  std::vector<float> sum_;  // Σ of the rows summed_ holds, in the order the full pass adds them
};

// squaredDistancesAndSum with a prefix (null: the plain call): bit for bit the plain call's
// results, the leading rows' share taken from `prefix` when it holds them.
double squaredDistancesAndSum(std::span<const float> center, Rows rows, std::span<double> out,
                              std::span<float> sum, RowPrefix* prefix);
// squaredDistancesTo with a prefix, the same way.
void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out,
                        RowPrefix* prefix);

// z = scale * (z + Σ_k weights[k] * rows[k]), block by block; rows whose weight is exactly 0
// are not read. Returns false when some result is not finite (overflow), so a caller that took
// a shortcut can redo the work the long way.
bool accumulateThenScale(Rows rows, std::span<const double> weights, double scale,
                         std::span<float> z);

// Pairwise squared distances of rows measured once, for rows that come back unchanged (an
// attacker's line search runs the rule on its honest rows in every evaluation), keyed by the
// rows' buffers: whoever builds one promises those buffers keep their contents while it is used.
class KnownDistances {
 public:
  explicit KnownDistances(Rows rows);
  // ‖a - b‖² when both are rows it measured (the same buffer and length), else nothing.
  std::optional<double> find(std::span<const float> a, std::span<const float> b) const;

 private:
  std::size_t length_;
  std::vector<const float*> rows_;
  std::vector<double> dist_;
};

// out[i * n + j] = ‖rows[i] - rows[j]‖², n = rows.size(); symmetric, zero diagonal. Rows that
// are one buffer are measured once, and pairs in `known` are taken from it: on the CPU, bit for
// bit what measuring them here would give.
void pairwiseSquaredDistances(Rows rows, std::span<double> out,
                              const KnownDistances* known = nullptr);

// out[k] = ‖rows[k]‖².
void squaredNorms(Rows rows, std::span<double> out);

// out[k] = dot(rows[k], y) (vector_ops.h), bit for bit: each row's sum runs in the same order,
// eight rows at a time, so the add latency of one row's chain hides behind the others'. Rows
// that are one buffer are summed once.
void dots(Rows rows, std::span<const float> y, std::span<double> out);

// out = Σ_k weights[k] * rows[k]; rows whose weight is exactly 0 are not read.
void weightedSum(Rows rows, std::span<const double> weights, std::span<float> out);

}  // namespace phalanx::kernels
