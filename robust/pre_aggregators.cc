#include "robust/pre_aggregators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/vector_ops.h"
#include "robust/rules.h"

namespace phalanx::robust {
namespace {

// Each output row is one input row (identity membership).
Stage identityStage(kernels::Rows in, std::span<const double> weights) {
  Stage s;
  for (std::size_t i = 0; i < in.size(); ++i) {
    s.rows.emplace_back(in[i].begin(), in[i].end());
    s.members.push_back({i});
  }
  s.weights.assign(weights.begin(), weights.end());
  return s;
}

// Nearest-neighbour mixing: every s_k becomes the mean of its |S| - b nearest, itself included.
class Nnm final : public PreAggregator {
 public:
  Stage apply(kernels::Rows in, std::span<const double> weights, std::size_t b) override {
    const std::size_t n = in.size();
    Stage s = identityStage(in, weights);
    if (n <= b || n == 0) return s;
    std::vector<double> pair(n * n), dist(n), w(n);
    kernels::pairwiseSquaredDistances(in, pair);
    for (std::size_t k = 0; k < n; ++k) {
      std::copy_n(pair.begin() + std::ptrdiff_t(k * n), n, dist.begin());
      dist[k] = -1.0;  // itself first, whatever rounding says
      auto order = orderByKey(dist);
      std::fill(w.begin(), w.end(), 0.0);
      for (std::size_t i = 0; i < n - b; ++i) w[order[i]] = 1.0 / double(n - b);
      kernels::weightedSum(in, w, s.rows[k]);
    }
    return s;
  }
};

}  // namespace

NnmWithCopies::NnmWithCopies(kernels::Rows rows, std::size_t copies, std::size_t b)
    : rows_(rows.begin(), rows.end()),
      copies_(copies),
      keep_(rows.size() + copies - b),
      dim_(rows.empty() ? 0 : rows[0].size()),
      pair_(rows.size() * rows.size()),
      order_(rows.size()),
      sums_(rows.size()) {
  const std::size_t h = rows.size();
  kernels::pairwiseSquaredDistances(rows, pair_);
  std::vector<double> dist(h);
  for (std::size_t k = 0; k < h; ++k) {
    std::copy_n(pair_.begin() + std::ptrdiff_t(k * h), h, dist.begin());
    dist[k] = -1.0;  // itself first, as in Nnm
    order_[k] = orderByKey(dist);
    sums_[k].resize(h + 1);
  }
  out_.assign(h + 1, std::vector<float>(dim_));
}

std::span<const float> NnmWithCopies::nearestSum(std::size_t k, std::size_t count) {
  std::vector<float>& sum = sums_[k][count];
  if (sum.empty()) {
    // A bound on the cache (the search touches one or two counts per row; big models at
    // many rows would not fit them all): past it, start again.
    constexpr std::size_t kMaxCachedFloats = std::size_t(1) << 28;  // 1 GiB
    if (cached_floats_ + dim_ > kMaxCachedFloats) {
      for (auto& per_row : sums_) {
        for (auto& v : per_row) std::vector<float>().swap(v);
      }
      cached_floats_ = 0;
    }
    std::vector<double> w(rows_.size(), 0.0);
    for (std::size_t i = 0; i < count; ++i) w[order_[k][i]] = 1.0;
    sum.resize(dim_);
    kernels::weightedSum(rows_, w, sum);
    cached_floats_ += dim_;
  }
  return sum;
}

std::vector<std::span<const float>> NnmWithCopies::apply(std::span<const float> extra) {
  const std::size_t h = rows_.size();
  std::vector<double> to_extra(h);
  kernels::squaredDistancesTo(extra, rows_, to_extra);
  const float inv = float(1.0 / double(keep_));
  for (std::size_t k = 0; k < h; ++k) {
    // Row k's neighbours: itself, the rows at most as far as the extra (ties by index: rows
    // come before copies), the copies, then the farther rows; the first keep_ of them.
    std::size_t nearer = 0;
    for (std::size_t i = 1; i < h; ++i)
      nearer += pair_[k * h + order_[k][i]] <= to_extra[k] ? 1 : 0;
    const std::size_t rows_first = std::min(keep_, 1 + nearer);
    const std::size_t taken_copies = std::min(copies_, keep_ - rows_first);
    const std::size_t taken_rows = keep_ - taken_copies;
    const std::span<const float> sum = nearestSum(k, taken_rows);
    std::vector<float>& o = out_[k];
    const auto m = float(taken_copies);
    for (std::size_t j = 0; j < dim_; ++j) o[j] = (sum[j] + m * extra[j]) * inv;
  }
  // A copy's neighbours: itself, rows at distance 0 from it (lower index), the other copies,
  // then the rows by distance to the extra.
  const std::vector<std::size_t> by_distance = orderByKey(to_extra);
  std::size_t at_zero = 0;
  while (at_zero < h && to_extra[by_distance[at_zero]] <= 0.0) ++at_zero;
  const std::size_t first_rows = std::min(keep_ - 1, at_zero);
  const std::size_t taken_copies = std::min(copies_, keep_ - first_rows);
  std::vector<double> w(h, 0.0);
  for (std::size_t i = 0; i < keep_ - taken_copies; ++i) w[by_distance[i]] = 1.0 / double(keep_);
  std::vector<float>& c = out_[h];
  kernels::weightedSum(rows_, w, c);
  kernels::axpy(float(double(taken_copies) / double(keep_)), extra, c);
  std::vector<std::span<const float>> result(out_.begin(), out_.begin() + std::ptrdiff_t(h));
  result.insert(result.end(), copies_, std::span<const float>(c));
  return result;
}

namespace {

// Static clipping: s_k <- CLIP(s_k, c).
class Clip final : public PreAggregator {
 public:
  explicit Clip(double c) : c_(c) {}
  Stage apply(kernels::Rows in, std::span<const double> weights, std::size_t) override {
    Stage s = identityStage(in, weights);
    std::vector<double> norms(in.size());
    kernels::squaredNorms(in, norms);
    for (std::size_t k = 0; k < in.size(); ++k) {
      kernels::scale(float(clipFactor(std::sqrt(norms[k]), c_)), s.rows[k]);
    }
    return s;
  }

 private:
  double c_;
};

// Adaptive robust clipping: the k = floor(2b/|S| * (|S| - b)) largest norms are clipped to
// the norm of the next largest.
class Arc final : public PreAggregator {
 public:
  Stage apply(kernels::Rows in, std::span<const double> weights, std::size_t b) override {
    Stage s = identityStage(in, weights);
    const std::size_t n = in.size();
    if (n == 0 || b >= n) return s;
    const auto k = std::size_t(std::floor(2.0 * double(b) / double(n) * double(n - b)));
    if (k == 0) return s;
    std::vector<double> norms(n);
    kernels::squaredNorms(in, norms);
    for (double& v : norms) v = std::sqrt(v);
    std::vector<double> negated(n);
    std::transform(norms.begin(), norms.end(), negated.begin(), [](double v) { return -v; });
    const auto order = orderByKey(negated);  // largest first, ties by index
    const std::size_t clipped = std::min(k, n - 1);
    const double radius = norms[order[clipped]];
    for (std::size_t i = 0; i < clipped; ++i) {
      kernels::scale(float(clipFactor(norms[order[i]], radius)), s.rows[order[i]]);
    }
    return s;
  }
};

// Bucketing: shuffle, cut into buckets of s, average each bucket.
class Bucketing final : public PreAggregator {
 public:
  Bucketing(std::size_t size, std::uint64_t seed) : size_(size), rng_(seed) {}
  Stage apply(kernels::Rows in, std::span<const double> weights, std::size_t) override {
    const std::size_t n = in.size();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    Stage s;
    std::vector<double> w(n);
    for (std::size_t start = 0; start < n; start += size_) {
      const std::size_t end = std::min(n, start + size_);
      std::vector<std::size_t> members(order.begin() + std::ptrdiff_t(start),
                                       order.begin() + std::ptrdiff_t(end));
      std::fill(w.begin(), w.end(), 0.0);
      double weight = 0;
      for (std::size_t i : members) {
        w[i] = 1.0 / double(members.size());
        weight += weights[i];
      }
      std::vector<float> row(in[0].size());
      kernels::weightedSum(in, w, row);
      // Keep the pivot's bucket first: pivot-based rules need it there.
      const bool has_pivot = std::find(members.begin(), members.end(), 0u) != members.end();
      const auto at = has_pivot ? 0 : std::ptrdiff_t(s.rows.size());
      s.rows.insert(s.rows.begin() + at, std::move(row));
      s.members.insert(s.members.begin() + at, std::move(members));
      s.weights.insert(s.weights.begin() + at, weight);
    }
    return s;
  }

 private:
  std::size_t size_;
  std::mt19937_64 rng_;
};

}  // namespace

std::expected<std::unique_ptr<PreAggregator>, std::string> makePreAggregator(const PreSpec& spec,
                                                                             std::uint64_t seed) {
  if (auto ok = checkPreSpec(spec); !ok) return std::unexpected(ok.error());
  switch (spec.kind) {
    case PreKind::kNnm:
      return std::make_unique<Nnm>();
    case PreKind::kArc:
      return std::make_unique<Arc>();
    case PreKind::kClip:
      return std::make_unique<Clip>(spec.param);
    case PreKind::kBucketing:
      return std::make_unique<Bucketing>(std::size_t(spec.param), seed);
  }
  return std::unexpected(fmt::format("unknown pre-aggregator kind {}", int(spec.kind)));
}

}  // namespace phalanx::robust
