#include "robust/attacks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "kernels/batch_ops.h"
#include "kernels/order_stats.h"
#include "kernels/vector_ops.h"
#include "robust/normal.h"
#include "robust/pre_aggregators.h"

namespace phalanx::robust {

void meanAndStd(Rows rows, std::span<float> mean, std::span<float> stddev) {
  const std::size_t h = rows.size(), d = mean.size();
  const long dl = long(d);
#pragma omp parallel for schedule(static)
  for (long j = 0; j < dl; ++j) {
    double sum = 0, sq = 0;
    for (std::size_t k = 0; k < h; ++k) sum += rows[k][std::size_t(j)];
    const double mu = sum / double(h);
    for (std::size_t k = 0; k < h; ++k) {
      const double dev = rows[k][std::size_t(j)] - mu;
      sq += dev * dev;
    }
    mean[std::size_t(j)] = float(mu);
    if (!stddev.empty())
      stddev[std::size_t(j)] = h > 1 ? float(std::sqrt(sq / double(h - 1))) : 0.0f;
  }
}

double lineSearch(const std::function<double(double)>& F, int evals, double start, double delta,
                  double ratio) {
  double best = start;
  double fbest = F(best);
  int left = evals - 1;
  while (left > 0) {  // expand
    const double y = F(best + delta);
    --left;
    if (y > fbest) {
      best += delta;
      fbest = y;
      delta *= 2;
    } else {
      delta *= ratio;
      break;
    }
  }
  while (left > 0) {  // contract
    const double y = F(best + delta);
    --left;
    if (y > fbest) {
      best += delta;
      fbest = y;
    }
    delta *= ratio;
  }
  return best;
}

double lineMaximize(const std::function<double(double)>& F, int evals, double start, double delta,
                    double ratio) {
  double best = start;
  double fbest = F(best);
  int left = evals - 1;
  double proposal = best;
  while (left > 0) {  // expand
    proposal = best + delta;
    const double y = F(proposal);
    --left;
    if (y > fbest) {
      best = proposal;
      fbest = y;
      delta *= 2;
    } else {
      delta *= ratio;
      break;
    }
  }
  while (left > 0) {  // contract around the best, from the last proposal
    if (proposal < best) {
      proposal += delta;
    } else {
      double x = proposal - delta;
      while (x < 0) x = (x + proposal) / 2;
      proposal = x;
    }
    const double y = F(proposal);
    --left;
    if (y > fbest) {
      best = proposal;
      fbest = y;
    }
    delta *= ratio;
  }
  return best;
}

namespace {

using Vec = Eigen::Map<Eigen::ArrayXf>;

std::expected<void, std::string> checkHonest(const AttackInput& in, std::span<float> out,
                                             std::size_t at_least, std::string_view name) {
  if (in.honest.size() < at_least) {
    return std::unexpected(fmt::format("{}: needs at least {} honest vector{}, knows {}", name,
                                       at_least, at_least == 1 ? "" : "s", in.honest.size()));
  }
  for (const auto& r : in.honest) {
    if (r.size() != out.size()) {
      return std::unexpected(
          fmt::format("{}: honest vector of length {}, expected {}", name, r.size(), out.size()));
    }
  }
  return {};
}

// The rows' pairwise distances for a line search's evaluations of a rule that measures every
// pair (krum, the principal trim): measured once, bit for bit what each evaluation would
// measure, while the rows stay as they are; nothing for other rules.
std::optional<kernels::KnownDistances> knownPairs(const AggregatorConfig& rule, Rows rows) {
  if (!measuresEveryPair(rule)) return std::nullopt;
  return std::optional<kernels::KnownDistances>(std::in_place, rows);
}

// ‖Agg(in) - from‖ for the line searches, the mix written to z; -inf when the rule refuses the
// set (its error kept in `failure`). A fresh aggregator each time: stateful rules (cc) must not
// carry one evaluation into the next.
struct MixDistance {
  std::string failure;
  int succeeded = 0;
  double operator()(const AggregatorConfig& rule, const MixInput& in, std::span<float> z,
                    std::span<const float> from) {
    auto agg = makeAggregator(rule);
    auto mixed = agg ? (*agg)->mix(in, z)
                     : std::expected<MixReport, std::string>(std::unexpected(agg.error()));
    if (!mixed) {
      failure = mixed.error();
      return -std::numeric_limits<double>::infinity();
    }
    ++succeeded;
    return std::sqrt(kernels::squaredDistance(z, from));
  }
};

// Vectors of the form base + tau * direction (alie: μ + tau σ; ipm: 0 + tau (-μ); signflip).
class LinearAttack : public Attack {
 public:
  LinearAttack(std::string name, double tau) : name_(std::move(name)), tau_(tau) {}
  std::string_view name() const override { return name_; }

  std::expected<void, std::string> craft(const AttackInput& in, std::span<float> out) override {
    if (auto ok = checkHonest(in, out, needsStd() ? 2 : 1, name_); !ok) return ok;
    prepare(in.honest, out.size());
    auto tau = chooseTau(in.honest);
    if (!tau) return std::unexpected(tau.error());
    compose(*tau, out);
    return {};
  }

 protected:
  virtual bool needsStd() const = 0;
  // Fills base_ and direction_ from the honest vectors.
  virtual void prepare(Rows honest, std::size_t d) = 0;
  virtual std::expected<double, std::string> chooseTau(Rows) { return tau_; }

  void compose(double tau, std::span<float> out) const {
    Vec(out.data(), Eigen::Index(out.size())) =
        Eigen::Map<const Eigen::ArrayXf>(base_.data(), Eigen::Index(base_.size())) +
        float(tau) *
            Eigen::Map<const Eigen::ArrayXf>(direction_.data(), Eigen::Index(direction_.size()));
  }

  std::string name_;
  double tau_;
  std::vector<float> base_, direction_, mean_;
};

class Alie : public LinearAttack {
 public:
  using LinearAttack::LinearAttack;

 protected:
  bool needsStd() const override { return true; }
  void prepare(Rows honest, std::size_t d) override {
    mean_.resize(d);
    direction_.resize(d);
    meanAndStd(honest, mean_, direction_);
    base_ = mean_;
  }
};

// Vectors along -μ. ipm: 0 + tau·(-μ), the gradient-space IPM. foe: μ + tau·(-μ) = (1 - tau)·μ,
// FOE in model space (the MoNNA reference's attack when peers exchange models): a shrunk honest
// mean, inside the honest cloud for small tau.
template <bool kFromMean>
class AlongMinusMean : public LinearAttack {
 public:
  using LinearAttack::LinearAttack;

 protected:
  bool needsStd() const override { return false; }
  void prepare(Rows honest, std::size_t d) override {
    mean_.resize(d);
    meanAndStd(honest, mean_, {});
    if (kFromMean) {
      base_ = mean_;
    } else {
      base_.assign(d, 0.0f);
    }
    direction_.resize(d);
    std::transform(mean_.begin(), mean_.end(), direction_.begin(), [](float v) { return -v; });
  }
};
using Ipm = AlongMinusMean<false>;
using Foe = AlongMinusMean<true>;

// Whether a rule's mix is the same whichever row is its pivot (no pre-aggregators in front).
bool pivotFree(const AggregatorConfig& rule) {
  return rule.pre.empty() &&
         (rule.rule == RuleId::kMean || rule.rule == RuleId::kCwtm || rule.rule == RuleId::kCwmed);
}

// opt_alie / opt_ipm / opt_foe / empire: tau maximizing by a line search ‖Agg(V(tau)) − μ‖, a
// pivot rule pivoting on the first honest row, or with AttackConfig::every_pivot (empire)
// ‖(1/h) Σ_i Agg_i(V(tau)) − μ‖, Agg_i pivoting on honest row i; V(tau) is the honest rows
// followed by AttackConfig::copies (f when unset) copies of the attack vector.
template <class Base>
class Optimized final : public Base {
 public:
  // reference_search: lineMaximize (opt_foe and empire, as the MoNNA reference searches FOE's
  // factor) instead of the §4 lineSearch.
  Optimized(std::string name, const AttackConfig& c, bool reference_search = false)
      : Base(std::move(name), 0.0),
        config_(c),
        copies_(c.copies > 0 ? c.copies : c.f),
        reference_search_(reference_search) {}

 protected:
  std::expected<double, std::string> chooseTau(Rows honest) override {
    const std::size_t d = this->mean_.size();
    std::vector<float> attack(d), z(d);
    std::vector<std::span<const float>> rows(honest.begin(), honest.end());
    rows.insert(rows.end(), copies_, std::span<const float>(attack));
    MixDistance distance;  // the rule's last error is fatal only if no evaluation succeeded
    // Against cwtm or cwmed without pre-aggregators, only the copies change between the 20
    // evaluations: sort the honest values per coordinate once and place the copies among them
    // (bit-identical to the rule on the full set, several times faster than sorting each time).
    const RuleId rule = config_.target.rule;
    const bool honest_finite =
        std::all_of(honest.begin(), honest.end(), [](auto r) { return kernels::allFinite(r); });
    const bool coordinate_rule =
        config_.target.pre.empty() && (rule == RuleId::kCwtm || rule == RuleId::kCwmed) &&
        (rule == RuleId::kCwmed || 2 * config_.target_b < rows.size()) && honest_finite;
    const kernels::SortedColumns sorted =
        coordinate_rule ? kernels::sortColumns(honest) : kernels::SortedColumns{};
    // Against nnm+...: nnm's honest-honest distances and neighbour sums are the same in every
    // evaluation; NnmWithCopies keeps them, and the rest of the pipeline runs on its output.
    AggregatorConfig after_nnm = config_.target;
    std::optional<NnmWithCopies> nnm;
    if (!config_.target.pre.empty() && config_.target.pre.front().kind == PreKind::kNnm &&
        !honest.empty() && rows.size() > config_.target_b && honest_finite) {
      after_nnm.pre.erase(after_nnm.pre.begin());
      nnm.emplace(honest, copies_, config_.target_b);
    }
    const auto known = knownPairs(config_.target, honest);
    // The plain search's rows are the honest ones, then the copies: a rule that sums every row
    // measures the honest ones once (kernels::RowPrefix), the copies in each evaluation.
    kernels::RowPrefix honest_prefix(honest.size());
    const auto distanceOfMix = [&](Rows set, const AggregatorConfig& target,
                                   kernels::RowPrefix* prefix = nullptr) {
      return distance(target, {set, config_.target_b, {}, known ? &*known : nullptr, prefix}, z,
                      this->mean_);
    };
    // The MoNNA reference's objective: every honest peer mixes with itself as the pivot, and the
    // search moves the average of their mixes. Pivot i's rows: its own, the other honest ones in
    // order, the copies — the same buffers as the first pivot's, so known distances apply.
    std::vector<double> average;
    std::vector<std::span<const float>> pivoted(rows.size());
    const auto distanceOfEveryPivot = [&]() {
      average.assign(d, 0.0);
      for (std::size_t i = 0; i < honest.size(); ++i) {
        pivoted[0] = rows[i];
        std::copy(rows.begin(), rows.begin() + std::ptrdiff_t(i), pivoted.begin() + 1);
        std::copy(rows.begin() + std::ptrdiff_t(i) + 1, rows.end(),
                  pivoted.begin() + std::ptrdiff_t(i) + 1);
        const double one = distanceOfMix(pivoted, config_.target);
        if (!std::isfinite(one)) return one;  // the rule refused the set
        for (std::size_t k = 0; k < d; ++k) average[k] += z[k];
      }
      double squared = 0;
      for (std::size_t k = 0; k < d; ++k) {
        const double gap = average[k] / double(honest.size()) - double(this->mean_[k]);
        squared += gap * gap;
      }
      return std::sqrt(squared);
    };
    const bool every_pivot = config_.every_pivot && !pivotFree(config_.target) && honest.size() > 1;
    auto F = [&](double tau) {
      this->compose(tau, attack);
      if (every_pivot) return distanceOfEveryPivot();
      if (nnm && kernels::allFinite(attack)) {
        const std::vector<std::span<const float>> mixed_rows = nnm->apply(attack);
        return distanceOfMix(mixed_rows, after_nnm);
      }
      if (coordinate_rule && kernels::allFinite(attack)) {
        if (rule == RuleId::kCwtm) {
          kernels::trimmedMeanWithCopies(sorted, attack, copies_, config_.target_b, z);
        } else {
          kernels::medianWithCopies(sorted, attack, copies_, z);
        }
        ++distance.succeeded;
        return std::sqrt(kernels::squaredDistance(z, this->mean_));
      }
      return distanceOfMix(rows, config_.target, &honest_prefix);
    };
    const double tau = reference_search_ ? lineMaximize(F) : lineSearch(F, config_.evals);
    if (distance.succeeded == 0) return std::unexpected(this->name_ + ": " + distance.failure);
    return tau;
  }

 private:
  AttackConfig config_;
  std::size_t copies_;  // attack rows in the mix searched against
  bool reference_search_;
};

class Mimic final : public Attack {
 public:
  explicit Mimic(std::size_t which) : which_(which) {}
  std::string_view name() const override { return "mimic"; }
  std::expected<void, std::string> craft(const AttackInput& in, std::span<float> out) override {
    if (auto ok = checkHonest(in, out, which_ + 1, "mimic"); !ok) return ok;
    std::copy(in.honest[which_].begin(), in.honest[which_].end(), out.begin());
    return {};
  }

 private:
  std::size_t which_;
};

// h_i = (1 - Σ W_ij) x_i + Σ W_ij x_j: target i's honest gossip step.
std::vector<float> honestStep(const TargetView& t) {
  std::vector<float> step(t.target.size());
  double moved = 0;
  for (double v : t.honest_weights) moved += v;
  kernels::weightedSum(t.honest_neighbours, t.honest_weights, step);
  kernels::axpy(float(1.0 - moved), t.target, step);
  return step;
}

// The factor of x_i + factor·direction, sent by each of i's Byzantine neighbours, that maximizes
// ‖Agg_i(x_i, honest neighbours, copies) − h_i‖ by lineMaximize (the robust-gossip reference's
// search), Agg_i the rule under attack with i's weights and budget.
std::expected<double, std::string> searchFactor(const AttackConfig& c, const TargetView& t,
                                                std::span<const float> direction,
                                                std::string_view name) {
  const std::size_t d = direction.size();
  const std::vector<float> honest_step = honestStep(t);
  std::vector<float> attack(d), z(d);
  std::vector<std::span<const float>> rows{t.target};
  std::vector<double> weights{0.0};
  for (std::size_t j = 0; j < t.honest_neighbours.size(); ++j) {
    rows.push_back(t.honest_neighbours[j]);
    weights.push_back(t.honest_weights[j]);
  }
  const auto known = knownPairs(c.target, rows);  // before the copies join
  // Only the copies change between evaluations: the target's and its honest neighbours'
  // distances to the pivot (and their sum, for rules that sum every row) are measured once.
  kernels::RowPrefix honest_prefix(rows.size());
  rows.insert(rows.end(), t.byzantine_count, std::span<const float>(attack));
  weights.insert(weights.end(), t.byzantine_count, t.byzantine_weight / double(t.byzantine_count));
  MixDistance distance;
  const auto F = [&](double x) {
    std::copy(t.target.begin(), t.target.end(), attack.begin());
    kernels::axpy(float(x), direction, attack);
    return distance(c.target, {rows, t.budget, weights, known ? &*known : nullptr, &honest_prefix},
                    z, honest_step);
  };
  const double factor = lineMaximize(F);
  if (distance.succeeded == 0)
    return std::unexpected(fmt::format("{}: {}", name, distance.failure));
  return factor;
}

// Per target i: x_i - eps * Σ_j W_ij (x_j - x_i) / Σ_b W_ib; eps fixed (He et al.'s 1.5), or
// (opt_dissensus) searched per target and round as the robust-gossip reference does.
class Dissensus final : public Attack {
 public:
  explicit Dissensus(double eps) : eps_(eps) {}
  explicit Dissensus(const AttackConfig& searched) : eps_(0), search_(searched) {}
  std::string_view name() const override { return search_ ? "opt_dissensus" : "dissensus"; }
  bool perTarget() const override { return true; }
  bool reentrant() const override { return true; }
  std::expected<void, std::string> craft(const AttackInput& in, std::span<float> out) override {
    const TargetView* t = in.target;
    if (t == nullptr) return std::unexpected("dissensus: needs the target's view");
    if (t->target.size() != out.size()) return std::unexpected("dissensus: target length mismatch");
    if (t->honest_weights.size() != t->honest_neighbours.size()) {
      return std::unexpected("dissensus: one weight per honest neighbour");
    }
    if (!(t->byzantine_weight > 0)) {
      return std::unexpected("dissensus: the target's Byzantine weight must be > 0");
    }
    if (search_) {
      if (t->byzantine_count == 0) return std::unexpected("opt_dissensus: no Byzantine neighbour");
      // The direction of one unit of eps: -(Σ W_ij (x_j - x_i)) / Wb.
      std::vector<float> direction(out.size());
      craftWith(*t, 1.0, direction);
      kernels::axpy(-1.0f, t->target, direction);
      const auto found = searchFactor(*search_, *t, direction, "opt_dissensus");
      if (!found) return std::unexpected(found.error());
      std::copy(t->target.begin(), t->target.end(), out.begin());
      kernels::axpy(float(*found), direction, out);  // the vector the search evaluated
      return {};
    }
    craftWith(*t, eps_, out);
    return {};
  }

 private:
  // x_i - (eps/Wb) Σ W_ij x_j + (eps/Wb) Σ W_ij x_i
  static void craftWith(const TargetView& t, double eps, std::span<float> out) {
    std::vector<double> w(t.honest_weights.begin(), t.honest_weights.end());
    double total = 0;
    for (double& v : w) total += (v *= -eps / t.byzantine_weight);
    kernels::weightedSum(t.honest_neighbours, w, out);
    kernels::axpy(float(1.0 - total), t.target, out);
  }

  double eps_;
  std::optional<AttackConfig> search_;
};

// Spectral heterogeneity (Gaucher, Dieuleveut, Hendrikx 2025), per target i: x_i + tau·d_i with
// d_i = v_i Σ_k v_k x_k (v: the Fiedler vector of the honest graph), which pushes the two sides
// of the graph's sparsest cut apart. tau maximizes ‖Agg_i(x_i, honest neighbours, copies) - h_i‖
// by lineMaximize, h_i = x_i + Σ_j W_ij (x_j - x_i) being i's honest gossip step.
class Spectral final : public Attack {
 public:
  explicit Spectral(const AttackConfig& c) : config_(c) {}
  std::string_view name() const override { return "spectral"; }
  bool perTarget() const override { return true; }
  bool reentrant() const override { return true; }
  std::expected<void, std::string> craft(const AttackInput& in, std::span<float> out) override {
    const TargetView* t = in.target;
    if (t == nullptr) return std::unexpected("spectral: needs the target's view");
    if (auto ok = checkHonest(in, out, 1, "spectral"); !ok) return ok;
    if (in.honest_fiedler.size() != in.honest.size()) {
      return std::unexpected("spectral: one Fiedler entry per honest vector");
    }
    if (t->target.size() != out.size()) return std::unexpected("spectral: target length mismatch");
    if (t->honest_weights.size() != t->honest_neighbours.size()) {
      return std::unexpected("spectral: one weight per honest neighbour");
    }
    if (t->byzantine_count == 0 || !(t->byzantine_weight > 0)) {
      return std::unexpected("spectral: the target needs a Byzantine neighbour");
    }
    std::vector<double> w(in.honest_fiedler.begin(), in.honest_fiedler.end());
    for (double& v : w) v *= t->fiedler;
    std::vector<float> direction(out.size());
    kernels::weightedSum(in.honest, w, direction);
    double tau = config_.tau.value_or(0.0);
    if (!config_.tau) {
      const auto found = searchFactor(config_, *t, direction, "spectral");
      if (!found) return std::unexpected(found.error());
      tau = *found;
    }
    std::copy(t->target.begin(), t->target.end(), out.begin());
    kernels::axpy(float(tau), direction, out);
    return {};
  }

 private:
  AttackConfig config_;
};

class Gaussian final : public Attack {
 public:
  Gaussian(double sigma, bool scale_to_mean, std::uint64_t seed)
      : sigma_(sigma), scale_(scale_to_mean), rng_(seed) {}
  std::string_view name() const override { return "gaussian"; }
  std::expected<void, std::string> craft(const AttackInput& in, std::span<float> out) override {
    double sigma = sigma_;
    if (scale_) {
      if (auto ok = checkHonest(in, out, 1, "gaussian"); !ok) return ok;
      std::vector<float> mean(out.size());
      meanAndStd(in.honest, mean, {});
      sigma = std::sqrt(kernels::squaredNorm(mean) / double(std::max<std::size_t>(out.size(), 1)));
    }
    std::normal_distribution<float> g(0.0f, float(sigma));
    for (float& v : out) v = g(rng_);
    return {};
  }

 private:
  double sigma_;
  bool scale_;
  std::mt19937_64 rng_;
};

class Constant final : public Attack {
 public:
  Constant(std::string name, float value) : name_(std::move(name)), value_(value) {}
  std::string_view name() const override { return name_; }
  std::expected<void, std::string> craft(const AttackInput&, std::span<float> out) override {
    std::fill(out.begin(), out.end(), value_);
    return {};
  }

 private:
  std::string name_;
  float value_;
};

}  // namespace

std::expected<std::unique_ptr<Attack>, std::string> makeAttack(const AttackConfig& c) {
  const std::string n(kAttacks.name(c.attack));
  switch (c.attack) {
    case AttackId::kSignflip:
      return std::make_unique<Ipm>(n, 1.0);
    case AttackId::kIpm:
      return std::make_unique<Ipm>(n, c.tau.value_or(2.0));
    case AttackId::kAlie: {
      if (!c.alie_z) return std::make_unique<Alie>(n, c.tau.value_or(1.5));
      if (c.n == 0 || c.f >= c.n) return std::unexpected("alie: z needs n > f >= 0");
      const double s = std::floor(double(c.n) / 2.0 + 1.0) - double(c.f);
      const double z = inverseNormalCdf((double(c.n - c.f) - s) / double(c.n - c.f));
      if (!std::isfinite(z)) {
        return std::unexpected(
            fmt::format("alie: no z for n = {}, f = {} ((n-f-s)/(n-f) outside (0,1))", c.n, c.f));
      }
      return std::make_unique<Alie>(n, z);
    }
    case AttackId::kFoe:
      return std::make_unique<Foe>(n, c.tau.value_or(0.1));
    case AttackId::kOptAlie:
    case AttackId::kOptIpm:
    case AttackId::kOptFoe:
    case AttackId::kEmpire:
    case AttackId::kSpectral:
    case AttackId::kOptDissensus: {
      if (c.evals < 1) return std::unexpected(n + ": needs evals >= 1");
      if (auto probe = makeAggregator(c.target); !probe)
        return std::unexpected(n + ": " + probe.error());
      if (c.attack == AttackId::kOptAlie) return std::make_unique<Optimized<Alie>>(n, c);
      if (c.attack == AttackId::kOptIpm) return std::make_unique<Optimized<Ipm>>(n, c);
      if (c.attack == AttackId::kOptFoe) {
        return std::make_unique<Optimized<Foe>>(n, c, /*reference_search=*/true);
      }
      if (c.attack == AttackId::kEmpire) {  // opt_foe searching against every pivot
        AttackConfig every = c;
        every.every_pivot = true;
        return std::make_unique<Optimized<Foe>>(n, every, /*reference_search=*/true);
      }
      if (c.attack == AttackId::kOptDissensus) return std::make_unique<Dissensus>(c);
      return std::make_unique<Spectral>(c);
    }
    case AttackId::kMimic:
      return std::make_unique<Mimic>(c.mimic);
    case AttackId::kDissensus:
      return std::make_unique<Dissensus>(c.eps);
    case AttackId::kGaussian:
      return std::make_unique<Gaussian>(c.sigma, c.scale_to_mean, c.seed);
    case AttackId::kNan:
      return std::make_unique<Constant>(n, std::numeric_limits<float>::quiet_NaN());
    case AttackId::kInf:
      return std::make_unique<Constant>(n, std::numeric_limits<float>::infinity());
    case AttackId::kZero:
      return std::make_unique<Constant>(n, 0.0f);
    case AttackId::kHuge:
      return std::make_unique<Constant>(n, kHugeValue);
  }
  return std::unexpected(fmt::format("unknown attack id {}", int(c.attack)));
}

}  // namespace phalanx::robust
