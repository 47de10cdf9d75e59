#include "robust/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/order_stats.h"
#include "kernels/vector_ops.h"

namespace phalanx::robust {

double clipFactor(double norm, double tau) {
  if (!std::isfinite(norm)) return 0.0;
  return norm <= tau ? 1.0 : tau / norm;
}

std::vector<std::size_t> orderByKey(std::span<const double> key) {
  std::vector<std::size_t> order(key.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  return order;
}

namespace {

// z = mean of rows[i] for i in `chosen`; marks them kept.
void meanOf(Rows rows, std::span<const std::size_t> chosen, std::span<float> z,
            std::vector<char>& kept) {
  std::vector<double> w(rows.size(), 0.0);
  for (std::size_t i : chosen) {
    w[i] = 1.0 / double(chosen.size());
    kept[i] = 1;
  }
  kernels::weightedSum(rows, w, z);
}

// Whether z = (Σ all − Σ excluded) / kept is as accurate as summing the kept rows: rounding
// in the float sum scales with the largest row summed, so no excluded row may be much larger
// than the kept ones (a "huge" attacker would swamp the kept rows' digits). Norms are bounded
// through the pivot: ‖x_k‖ ≤ ‖pivot‖ + ‖x_k − pivot‖.
bool subtractingIsSafe(const RuleInput& in, std::span<const std::size_t> order, std::size_t keep) {
  const std::size_t n = in.rows.size();
  if (!in.z_holds_row_sum || n - keep >= keep) return false;  // summing kept reads fewer rows
  double kept_reach = 0, excluded_reach = 0;
  for (std::size_t r = 0; r < n; ++r) {
    double& reach = r < keep ? kept_reach : excluded_reach;
    reach = std::max(reach, std::sqrt(in.to_pivot[order[r]]));
  }
  const double pivot_norm = std::sqrt(in.pivot_squared_norm);
  return pivot_norm + excluded_reach <= 2.0 * (pivot_norm + kept_reach);
}

// z = mean of the rows not in `excluded`, finished from the row sum z already holds (one read
// of the excluded rows); false when the float sum overflowed, so the caller sums directly.
bool meanFromRowSum(const RuleInput& in, std::span<const std::size_t> excluded,
                    std::span<float> z) {
  std::vector<double> w(in.rows.size(), 0.0);
  for (std::size_t i : excluded) w[i] = -1.0;
  return kernels::accumulateThenScale(in.rows, w, 1.0 / double(in.rows.size() - excluded.size()),
                                      z);
}

class Nna final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    if (n <= in.b) {  // |S| - b < 1: nothing can be trusted but ourselves
      std::copy(in.rows[0].begin(), in.rows[0].end(), z.begin());
      kept[0] = 1;
      return {};
    }
    std::vector<double> dist(in.to_pivot.begin(), in.to_pivot.end());
    dist[0] = -1.0;  // the pivot is always kept, whatever rounding says
    auto order = orderByKey(dist);
    const std::size_t keep = n - in.b;
    const std::span<const std::size_t> closest(order.data(), keep);
    if (subtractingIsSafe(in, order, keep) &&
        meanFromRowSum(in, std::span(order).subspan(keep), z)) {
      for (std::size_t i : closest) kept[i] = 1;
      return {};
    }
    meanOf(in.rows, closest, z, kept);
    return {};
  }
  bool sumsAllRows() const override { return true; }
};

class Mean final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    std::fill(kept.begin(), kept.end(), 1);
    if (in.z_holds_row_sum && meanFromRowSum(in, {}, z)) return {};
    std::vector<std::size_t> all(in.rows.size());
    std::iota(all.begin(), all.end(), 0);
    meanOf(in.rows, all, z, kept);
    return {};
  }
  bool sumsAllRows() const override { return true; }
};

class Metropolis final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    std::vector<double> w(in.weights.begin(), in.weights.end());
    double others = 0;
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (!(w[i] >= 0)) return std::unexpected(fmt::format("metropolis: weight {} is negative", i));
      others += w[i];
    }
    if (others > 1.0 + 1e-9) {
      return std::unexpected(fmt::format("metropolis: peer weights sum to {} > 1", others));
    }
    w[0] = 1.0 - others;  // missing peers' weight stays on self
    std::fill(kept.begin(), kept.end(), 1);
    kernels::weightedSum(in.rows, w, z);
    return {};
  }
};

class TrimmedMean final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    if (2 * in.b >= in.rows.size()) {
      return std::unexpected(fmt::format(
          "cwtm: 2b = {} must be below the number of vectors |S| = {}", 2 * in.b, in.rows.size()));
    }
    kernels::coordinateTrimmedMean(in.rows, in.b, z);
    std::fill(kept.begin(), kept.end(), 1);
    return {};
  }
};

class Median final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    kernels::coordinateMedian(in.rows, z);
    std::fill(kept.begin(), kept.end(), 1);
    return {};
  }
};

// Smoothed Weiszfeld: nu = 0.1, T = 3, z0 = 0.
class GeometricMedian final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    constexpr double kNu = 0.1;
    constexpr int kIterations = 3;
    const std::size_t n = in.rows.size();
    std::fill(z.begin(), z.end(), 0.0f);
    std::vector<double> dist(n), w(n);
    for (int t = 0; t < kIterations; ++t) {
      kernels::squaredDistancesTo(z, in.rows, dist);
      double total = 0;
      for (std::size_t k = 0; k < n; ++k) total += (w[k] = 1.0 / std::max(std::sqrt(dist[k]), kNu));
      for (double& v : w) v /= total;
      kernels::weightedSum(in.rows, w, z);
    }
    std::fill(kept.begin(), kept.end(), 1);
    return {};
  }
};

class Krum final : public Rule {
 public:
  explicit Krum(bool multi) : multi_(multi) {}
  bool measuresEveryPair() const override { return true; }
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    if (n < in.b + 2) {
      return std::unexpected(fmt::format("{}: needs |S| >= b + 2 vectors, has |S| = {} with b = {}",
                                         multi_ ? "multikrum" : "krum", n, in.b));
    }
    std::vector<double> pair(n * n);
    kernels::pairwiseSquaredDistances(in.rows, pair, in.known_distances);
    const std::size_t neighbours = n - in.b - 1;
    std::vector<double> score(n), others;
    for (std::size_t k = 0; k < n; ++k) {
      others.clear();
      for (std::size_t j = 0; j < n; ++j) {
        if (j != k) others.push_back(pair[k * n + j]);
      }
      std::partial_sort(others.begin(), others.begin() + std::ptrdiff_t(neighbours), others.end());
      score[k] = std::accumulate(others.begin(), others.begin() + std::ptrdiff_t(neighbours), 0.0) /
                 double(neighbours);
    }
    auto order = orderByKey(score);
    order.resize(multi_ ? n - in.b : 1);
    meanOf(in.rows, order, z, kept);
    return {};
  }

 private:
  bool multi_;
};

// v <- v + mean_k CLIP(s_k - v, tau), L times; v persists across rounds.
class CenteredClipping final : public Rule {
 public:
  CenteredClipping(double tau, int iters) : tau_(tau), iters_(iters) {}
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    if (v_.size() != z.size() || !kernels::allFinite(v_)) {
      v_.assign(in.rows[0].begin(), in.rows[0].end());  // start at the node's own model
    }
    std::vector<double> dist(n), w(n);
    std::vector<float> next(z.size());
    for (int l = 0; l < iters_; ++l) {
      kernels::squaredDistancesTo(v_, in.rows, dist);
      // v + mean_k f_k (s_k - v) = (1 - Σ f_k / n) v + Σ (f_k / n) s_k
      double total = 0;
      for (std::size_t k = 0; k < n; ++k)
        total += (w[k] = clipFactor(std::sqrt(dist[k]), tau_) / double(n));
      kernels::weightedSum(in.rows, w, next);
      kernels::axpy(float(1.0 - total), v_, next);
      v_.swap(next);
    }
    std::copy(v_.begin(), v_.end(), z.begin());
    std::fill(kept.begin(), kept.end(), 1);
    return {};
  }

 private:
  double tau_;
  int iters_;
  std::vector<float> v_;
};

// z = c + Σ_j W_ij CLIP(r_j - c, tau); tau adaptive = the second-largest ‖r_j - c‖ (the practical
// radius is ClippedGossipHe's, below).
class ClippedGossip final : public Rule {
 public:
  explicit ClippedGossip(double tau) : tau_(tau) {}
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    const std::span<const double> dist = in.to_pivot;
    std::vector<double> w(n, 0.0);
    double tau = tau_;
    if (tau == 0 && n > 1) {
      std::vector<double> norms;
      for (std::size_t j = 1; j < n; ++j) norms.push_back(std::sqrt(dist[j]));
      std::sort(norms.rbegin(), norms.rend());
      tau = norms.size() == 1 ? norms[0] : norms[1];
    }
    // c + Σ_j W_j f_j (r_j - c) = (1 - Σ W_j f_j) c + Σ_j W_j f_j r_j
    double moved = 0;
    for (std::size_t j = 1; j < n; ++j) {
      moved += (w[j] = in.weights[j] * clipFactor(std::sqrt(dist[j]), tau));
    }
    w[0] = 1.0 - moved;
    kernels::weightedSum(in.rows, w, z);
    std::fill(kept.begin(), kept.end(), 1);
    return {};
  }

 private:
  double tau_;
};

// The weights F-RG rules (Gaucher et al. 2025) work with: the pivot's own weight
// W_ii = 1 - Σ_j W_ij (what missing peers leave on self), the Byzantine weight B = the b largest
// W_ij (the attacker takes the heaviest edges), and the rows by distance, pivot first.
struct RobustSumWeights {
  std::vector<double> w;  // per row, the pivot's included
  double total = 0;       // Σ w
  double byzantine = 0;   // B
  std::vector<std::size_t> order;
  // The slack of comparisons of cumulative weights with W − k·B: sums of fractions round.
  double eps() const { return 1e-12 * std::max(total, 1.0); }

  // Walking the rows in order: the position of the first whose cumulative weight reaches
  // `target` (within eps), and that weight; {order.size(), W} when none does.
  struct Reach {
    std::size_t at;
    double cumulative;
  };
  Reach firstReaching(double target) const {
    double cumulative = 0;
    for (std::size_t at = 0; at < order.size(); ++at) {
      cumulative += w[order[at]];
      if (cumulative >= target - eps()) return {at, cumulative};
    }
    return {order.size(), cumulative};
  }
};

RobustSumWeights robustSumWeights(const RuleInput& in) {
  const std::size_t n = in.rows.size();
  RobustSumWeights r;
  r.w.assign(in.weights.begin(), in.weights.end());
  double others = 0;
  for (std::size_t k = 1; k < n; ++k) others += r.w[k];
  r.w[0] = std::max(0.0, 1.0 - others);
  r.total = r.w[0] + others;
  std::vector<double> peer(r.w.begin() + 1, r.w.end());
  std::sort(peer.rbegin(), peer.rend());
  for (std::size_t k = 0; k < std::min(in.b, peer.size()); ++k) r.byzantine += peer[k];
  std::vector<double> dist(in.to_pivot.begin(), in.to_pivot.end());
  dist[0] = -1.0;  // the pivot first, whatever rounding says
  r.order = orderByKey(dist);
  return r;
}

// z = (1 - Σ_k c_k) x_0 + Σ_k c_k x_k over k >= 1: x_0 moved by Σ c_k (x_k - x_0). Kept: the
// pivot and every row with c_k > 0.
void moveFromPivot(Rows rows, std::vector<double> c, std::span<float> z, std::vector<char>& kept) {
  double moved = 0;
  for (std::size_t k = 1; k < c.size(); ++k) {
    moved += c[k];
    kept[k] = c[k] > 0 ? 1 : 0;
  }
  c[0] = 1.0 - moved;
  kept[0] = 1;
  kernels::weightedSum(rows, c, z);
}

// The radial trim (ALGORITHMS.md §2 "nna_rt", "cs_plus_rt"): a rule that moves the pivot c by
// z - c = Σ_k a_k v_k (v_k the row's possibly clipped offset r_k - c, 0 for the pivot) has its
// component along u = c/‖c‖ replaced by the a-weighted mean of ⟨v_k, u⟩ once weight `trim` is
// cut from each end. Along u the b rows an attacker holds cannot move the mix beyond the honest
// order statistics, whichever side they sit on — FOE's shrink from inside the honest cloud
// included — while across u the rule is untouched.

// The weighted mean of `values` once weight `trim` is cut from each end: each value keeps the
// part of its weight inside [trim, total - trim] of the cumulative weight, in ascending order;
// when nothing is left (trim ≥ total/2) the weighted median stands for it.
double trimmedMean(std::span<const double> values, std::span<const double> weights, double trim) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
  double total = 0;
  for (const double w : weights) total += w;
  trim = std::clamp(trim, 0.0, total / 2);
  double kept = 0, sum = 0, below = 0, median = 0;
  bool median_found = false;
  for (const std::size_t k : order) {
    const double above = below + weights[k];
    const double part = std::max(0.0, std::min(above, total - trim) - std::max(below, trim));
    kept += part;
    sum += part * values[k];
    if (!median_found && above >= total / 2) {
      median = values[k];
      median_found = true;
    }
    below = above;
  }
  return kept > 1e-12 * total ? sum / kept : median;
}

// A direction e through the pivot c = rows[0], measured once per mix: ‖e‖, ⟨c, e⟩/‖e‖ and every
// row's offset along it, in one pass over the rows. The radial trim's is the pivot's own, e = c;
// the principal trim's the offsets' principal direction.
struct TrimAxis {
  TrimAxis(Rows rows, std::span<const float> direction) : c(rows[0]), e(direction) {
    along_rows.assign(rows.size(), 0.0);
    if (e.empty()) return;  // no axis (principalDirection found none): e = 0
    std::vector<std::span<const float>> with_e(rows.begin(), rows.end());
    with_e.push_back(e);
    std::vector<double> products(with_e.size());
    kernels::dots(with_e, e, products);
    norm = std::sqrt(products.back());
    if (!(norm > 0)) return;
    along = products[0] / norm;
    for (std::size_t k = 1; k < rows.size(); ++k) along_rows[k] = products[k] / norm - along;
  }
  std::span<const float> c, e;
  double norm = 0;
  double along = 0;
  std::vector<double> along_rows;  // ⟨r_k - c, e/‖e‖⟩ (the pivot's 0); all zero when e = 0

  const std::vector<double>& offsets() const { return along_rows; }
  // Moves z along e so that ⟨z - c, e/‖e‖⟩ = target; nothing when e = 0.
  void set(double target, std::span<float> z) const {
    if (!(norm > 0)) return;
    const double now = kernels::dot(z, e) / norm - along;
    kernels::axpy(float((target - now) / norm), e, z);
  }
};

// The principal direction of the offsets v_k = f_k (r_k - c) (v_0 = 0) around their a-weighted
// mean m: the top eigenvector of Σ_k a_k (v_k - m)(v_k - m)^T. Found in row space: with the
// centred Gram matrix C_ij = ⟨v_i - m, v_j - m⟩ (from the pairwise distances, one blocked pass),
// power iteration on D^½ C D^½ (D = diag(a)) gives α, and e = Σ_k √a_k α_k (v_k - m), formed as
// one weighted sum of the rows. Empty (no axis) when every offset is m.
std::vector<float> principalDirection(Rows rows, std::span<const double> to_pivot,
                                      std::span<const double> a, std::span<const double> f,
                                      const kernels::KnownDistances* known) {
  constexpr int kIterations = 200;  // on an n x n matrix: negligible next to one pass over d
  const std::size_t n = rows.size();
  std::vector<double> dist(n * n);
  kernels::pairwiseSquaredDistances(rows, dist, known);
  double total = 0;
  for (const double w : a) total += w;
  // V_ij = ⟨v_i, v_j⟩ = f_i f_j (‖r_i - c‖² + ‖r_j - c‖² - ‖r_i - r_j‖²) / 2, row 0 the pivot.
  std::vector<double> v(n * n, 0.0), vp(n, 0.0);
  for (std::size_t i = 1; i < n; ++i) {
    for (std::size_t j = 1; j < n; ++j)
      v[i * n + j] = f[i] * f[j] * (to_pivot[i] + to_pivot[j] - dist[i * n + j]) / 2;
  }
  double pvp = 0;  // vp = V p, pvp = pᵀ V p, p = a / Σa
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) vp[i] += v[i * n + j] * a[j] / total;
    pvp += a[i] / total * vp[i];
  }
  std::vector<double> m(n * n);  // D^½ C D^½
  std::size_t start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      m[i * n + j] = std::sqrt(a[i] * a[j]) * (v[i * n + j] - vp[i] - vp[j] + pvp);
    }
    if (m[i * n + i] > m[start * n + start]) start = i;
  }
  std::vector<double> alpha(n, 0.0), next(n);
  alpha[start] = 1.0;
  for (int it = 0; it < kIterations; ++it) {
    double norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
      next[i] = 0;
      for (std::size_t j = 0; j < n; ++j) next[i] += m[i * n + j] * alpha[j];
      norm += next[i] * next[i];
    }
    if (!(norm > 0)) return {};
    norm = std::sqrt(norm);
    for (std::size_t i = 0; i < n; ++i) alpha[i] = next[i] / norm;
  }
  // e = Σ_k β_k (v_k - m), β_k = √a_k α_k, m = Σ_l p_l v_l: on r_k (β_k - p_k Σβ) f_k, on c the
  // rest so that the coefficients sum to 0.
  double beta_sum = 0;
  for (std::size_t k = 0; k < n; ++k) beta_sum += std::sqrt(a[k]) * alpha[k];
  std::vector<double> coef(n, 0.0);
  for (std::size_t k = 1; k < n; ++k) {
    coef[k] = (std::sqrt(a[k]) * alpha[k] - a[k] / total * beta_sum) * f[k];
    coef[0] -= coef[k];
  }
  std::vector<float> e(rows[0].size());
  kernels::weightedSum(rows, coef, e);
  return e;
}

// CS+-RG: z = x_i + Σ_j W_ij CLIP(x_j - x_i, tau), tau the distance beyond which the rows weigh
// 2B (weight total - 2B lies within tau); B = 0 clips nothing. cs_plus_rt adds the radial trim,
// cs_plus_pt the principal trim, cs_plus_rpt both (the principal one across the pivot),
// cs_plus_st the one of the two that moves the step most in this mix, each with the
// coefficients W_ij (the pivot's W_ii), the clipped offsets and trim weight B.
class CsPlus final : public Rule {
 public:
  explicit CsPlus(CsPlusTrim trim) : trim_(trim) {}
  // Every trim but the radial one alone reads the principal direction, whose centred Gram
  // matrix comes from every pair of rows.
  bool measuresEveryPair() const override {
    return trim_ != CsPlusTrim::kNone && trim_ != CsPlusTrim::kRadial;
  }
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    const RobustSumWeights r = robustSumWeights(in);
    const double target = r.total - 2.0 * r.byzantine;
    double tau = std::numeric_limits<double>::infinity();
    const auto reach = r.byzantine > 0 ? r.firstReaching(target) : RobustSumWeights::Reach{n, 0};
    if (const std::size_t at = reach.at; at < n) {
      if (reach.cumulative <= target + r.eps()) {  // reached exactly at that row
        tau = std::sqrt(in.to_pivot[r.order[at]]);
      } else {  // passed inside it: the row before
        tau = at == 0 ? 0.0 : std::sqrt(in.to_pivot[r.order[at - 1]]);
      }
    }
    std::vector<double> c(n, 0.0), f(n, 1.0);
    for (std::size_t k = 1; k < n; ++k) {
      f[k] = clipFactor(std::sqrt(in.to_pivot[k]), tau);
      c[k] = r.w[k] * f[k];
    }
    moveFromPivot(in.rows, std::move(c), z, kept);
    if (trim_ == CsPlusTrim::kNone || n < 3) return {};
    // Along an axis: where the trim puts the step's component (Σa times the clipped offsets'
    // trimmed mean) and how far that is from CS+-RG's own component (their weighted sum).
    struct AxisTrim {
      double target = 0, shift = 0;
    };
    const auto trimOn = [&](const TrimAxis& axis) {
      std::vector<double> along = axis.offsets();
      double step = 0;
      for (std::size_t k = 1; k < n; ++k) step += r.w[k] * (along[k] *= f[k]);
      const double target = r.total * trimmedMean(along, r.w, r.byzantine);
      return AxisTrim{target, std::abs(target - step)};
    };
    const auto trimAlong = [&](const TrimAxis& axis) { axis.set(trimOn(axis).target, z); };
    const bool radial = trim_ == CsPlusTrim::kRadial || trim_ == CsPlusTrim::kBoth;
    if (radial) trimAlong(TrimAxis(in.rows, in.rows[0]));
    if (trim_ == CsPlusTrim::kRadial) return {};
    std::vector<float> principal =
        principalDirection(in.rows, in.to_pivot, r.w, f, in.known_distances);
    if (trim_ == CsPlusTrim::kSelected) {
      // Both axes measured, one trimmed: the one where the trim moves the step most, i.e. where
      // rows at one end pull it (the radial one on a tie or without a principal direction).
      const TrimAxis along_u(in.rows, in.rows[0]), along_e(in.rows, principal);
      const AxisTrim u = trimOn(along_u), e = trimOn(along_e);
      if (e.shift > u.shift) {
        along_e.set(e.target, z);
      } else {
        along_u.set(u.target, z);
      }
      return {};
    }
    // Both trims: the principal one acts only across the pivot, on what the radial one left.
    if (radial && !principal.empty()) {
      const double cc = kernels::squaredNorm(in.rows[0]);
      if (cc > 0)
        kernels::axpy(float(-kernels::dot(principal, in.rows[0]) / cc), in.rows[0], principal);
    }
    trimAlong(TrimAxis(in.rows, principal));
    return {};
  }

 private:
  CsPlusTrim trim_;
};

// GTS-RG: z = x_i + Σ_j c_j (x_j - x_i), c the weights of the closest rows up to weight
// total - B (the row at the boundary with the part of its weight that fits).
class Gts final : public Rule {
 public:
  explicit Gts(GtsBoundary boundary) : boundary_(boundary) {}
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    const RobustSumWeights r = robustSumWeights(in);
    const double target = r.total - r.byzantine;
    std::vector<double> c(n, 0.0);
    if (boundary_ == GtsBoundary::kWhatFits) {
      double room = target;
      for (const std::size_t k : r.order) {
        c[k] = std::clamp(room, 0.0, r.w[k]);
        room -= r.w[k];
      }
    } else {
      // The rows before the boundary in full; the boundary row what its cumulative weight
      // exceeds W − B by: nothing on an exact hit.
      const auto reach = r.firstReaching(target);
      for (std::size_t at = 0; at < reach.at; ++at) c[r.order[at]] = r.w[r.order[at]];
      const double excess = reach.cumulative - target;
      if (reach.at < n && excess > r.eps()) c[r.order[reach.at]] = excess;
    }
    moveFromPivot(in.rows, std::move(c), z, kept);
    return {};
  }

 private:
  GtsBoundary boundary_;
};

// ClippedGossip with He, Karimireddy and Jaggi's practical radius in its weighted form, as the
// robust-gossip reference has it (CShe_RG, the paper's ClippedGossip baseline): with the rows by
// distance, pivot first, and i the first whose cumulative weight reaches W − B,
// τ² = Σ_{k<i} w_k ‖r_k − c‖² / B (0 when i is the pivot's; ∞ when B = 0 or nothing reaches it);
// z = c + Σ_j W_ij CLIP(r_j − c, τ).
class ClippedGossipHe final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    const RobustSumWeights r = robustSumWeights(in);
    double tau = std::numeric_limits<double>::infinity();
    const std::size_t reach = r.byzantine > 0 ? r.firstReaching(r.total - r.byzantine).at : n;
    if (reach < n) {
      double below = 0;
      for (std::size_t at = 0; at < reach; ++at) {
        below += r.w[r.order[at]] * in.to_pivot[r.order[at]];
      }
      tau = std::sqrt(below / r.byzantine);
    }
    std::vector<double> c(n, 0.0);
    for (std::size_t k = 1; k < n; ++k) c[k] = r.w[k] * clipFactor(std::sqrt(in.to_pivot[k]), tau);
    moveFromPivot(in.rows, std::move(c), z, kept);  // a row clipped to nothing is left out
    return {};
  }
};

// IOS (Wu, Chen, Ling 2023): b times, drop the trusted neighbour farthest from the weighted
// mean of the trusted rows (the pivot always trusted); z = that mean at the end.
class Ios final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    const std::size_t n = in.rows.size();
    const RobustSumWeights r = robustSumWeights(in);
    std::vector<char> trusted(n, 1);
    std::vector<double> dist(n);
    const auto trustedMean = [&](std::span<float> out) {
      double sum = 0;
      for (std::size_t k = 0; k < n; ++k) sum += trusted[k] ? r.w[k] : 0.0;
      if (!(sum > 0)) {  // nothing left with weight (no self weight): stay put
        std::copy(in.rows[0].begin(), in.rows[0].end(), out.begin());
        return;
      }
      std::vector<double> c(n, 0.0);
      for (std::size_t k = 0; k < n; ++k) c[k] = trusted[k] ? r.w[k] / sum : 0.0;
      kernels::weightedSum(in.rows, c, out);
    };
    for (std::size_t round = 0; round < in.b; ++round) {
      trustedMean(z);
      kernels::squaredDistancesTo(z, in.rows, dist);
      std::size_t far = 0;
      for (std::size_t k = 1; k < n; ++k) {
        if (trusted[k] && (far == 0 || dist[k] > dist[far])) far = k;
      }
      if (far == 0) break;  // only the pivot is left
      trusted[far] = 0;
    }
    trustedMean(z);
    for (std::size_t k = 0; k < n; ++k) kept[k] = trusted[k];
    return {};
  }
};

// NNA with a radially trimmed mean (ALGORITHMS.md §2 "nna_rt"): NNA's mix with the radial trim
// over the rows NNA kept, equal coefficients, b of them cut from each end (at most (m - 1)/2 of
// the m kept). Only the kept rows: a row NNA dropped pulling along u while the kept ones push
// across it shrinks the model every round (on two worlds under the spectral attack, to zero).
class RadialNna final : public Rule {
 public:
  std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                         std::vector<char>& kept) override {
    RuleInput plain = in;
    plain.z_holds_row_sum = false;
    if (auto ok = nna_->apply(plain, z, kept); !ok) return ok;
    const std::size_t n = in.rows.size();
    if (n < 3) return {};  // nothing to trim
    const TrimAxis axis(in.rows, in.rows[0]);
    const std::vector<double>& along = axis.offsets();
    std::vector<double> values, ones;
    for (std::size_t k = 0; k < n; ++k) {
      if (!kept[k]) continue;
      values.push_back(along[k]);
      ones.push_back(1.0);
    }
    const std::size_t trim = std::min(in.b, (values.size() - 1) / 2);
    axis.set(trimmedMean(values, ones, double(trim)), z);
    return {};
  }

 private:
  std::unique_ptr<Rule> nna_ = makeNna();
};

}  // namespace

std::unique_ptr<Rule> makeRadialNna() { return std::make_unique<RadialNna>(); }
std::unique_ptr<Rule> makeCsPlus(CsPlusTrim trim) { return std::make_unique<CsPlus>(trim); }
std::unique_ptr<Rule> makeGts(GtsBoundary boundary) { return std::make_unique<Gts>(boundary); }
std::unique_ptr<Rule> makeIos() { return std::make_unique<Ios>(); }
std::unique_ptr<Rule> makeNna() { return std::make_unique<Nna>(); }
std::unique_ptr<Rule> makeMean() { return std::make_unique<Mean>(); }
std::unique_ptr<Rule> makeMetropolis() { return std::make_unique<Metropolis>(); }
std::unique_ptr<Rule> makeTrimmedMean() { return std::make_unique<TrimmedMean>(); }
std::unique_ptr<Rule> makeMedian() { return std::make_unique<Median>(); }
std::unique_ptr<Rule> makeGeometricMedian() { return std::make_unique<GeometricMedian>(); }
std::unique_ptr<Rule> makeKrum(bool multi) { return std::make_unique<Krum>(multi); }
std::unique_ptr<Rule> makeCenteredClipping(double tau, int iters) {
  return std::make_unique<CenteredClipping>(tau, iters);
}
std::unique_ptr<Rule> makeClippedGossip(double tau) { return std::make_unique<ClippedGossip>(tau); }
std::unique_ptr<Rule> makeClippedGossipHe() { return std::make_unique<ClippedGossipHe>(); }

}  // namespace phalanx::robust
