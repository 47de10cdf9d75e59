#include "robust/aggregator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/vector_ops.h"
#include "robust/pre_aggregators.h"
#include "robust/rules.h"

namespace phalanx::robust {
namespace {

class Pipeline final : public Aggregator {
 public:
  Pipeline(std::string name, std::unique_ptr<Rule> rule,
           std::vector<std::unique_ptr<PreAggregator>> pre)
      : name_(std::move(name)), rule_(std::move(rule)), pre_(std::move(pre)) {}

  std::string_view name() const override { return name_; }
  bool measuresEveryPair() const override { return pre_.empty() && rule_->measuresEveryPair(); }

  std::expected<MixReport, std::string> mix(const MixInput& in, std::span<float> out) override {
    const std::size_t n = in.rows.size();
    if (n == 0) return std::unexpected("mix: no pivot row");
    for (std::size_t i = 0; i < n; ++i) {
      if (in.rows[i].size() != out.size()) {
        return std::unexpected(fmt::format("mix: row {} has length {}, expected {}", i,
                                           in.rows[i].size(), out.size()));
      }
    }
    if (!in.weights.empty() && in.weights.size() != n) {
      return std::unexpected(fmt::format("mix: {} weights for {} rows", in.weights.size(), n));
    }
    MixReport report;
    report.kept.assign(n, 0);
    report.nonfinite.assign(n, 0);
    report.distance.assign(n, 0.0);
    // Per-thread scratch: an attacker's line search mixes thousands of times a round, and each
    // call allocating its dozen small vectors showed as a tenth of a large simulation's time.
    thread_local Scratch scratch;
    std::vector<double>& sq = scratch.sq;
    sq.resize(n);
    // A rule that can finish from Σ rows gets it from the distance pass, so the rows are read
    // once instead of twice (the sum lands in `out`, which the rule overwrites anyway).
    const bool fused = pre_.empty() && rule_->sumsAllRows();
    double pivot_squared_norm = 0;
    if (fused) {
      pivot_squared_norm =
          kernels::squaredDistancesAndSum(in.rows[0], in.rows, sq, out, in.row_prefix);
    } else {
      kernels::squaredDistancesTo(in.rows[0], in.rows, sq, in.row_prefix);
    }
    // The pivot's distance to itself is (c - c)² summed: NaN exactly when c holds NaN or Inf.
    if (!std::isfinite(sq[0])) return std::unexpected("mix: the pivot holds NaN or Inf");

    // Drop non-finite rows; they use up budget (they are certainly Byzantine).
    std::vector<std::span<const float>>& finite = scratch.finite;
    std::vector<std::size_t>& origin = scratch.origin;  // finite index -> input index
    std::vector<double>& weights = scratch.weights;
    finite.clear();
    origin.clear();
    weights.clear();
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(sq[i])) {
        report.nonfinite[i] = 1;
        report.distance[i] = std::numeric_limits<double>::infinity();
        ++dropped;
        continue;
      }
      report.distance[i] = std::sqrt(sq[i]);
      finite.push_back(in.rows[i]);
      origin.push_back(i);
      weights.push_back(in.weights.empty() ? 1.0 / double(n) : in.weights[i]);
    }
    const std::size_t b = in.byzantine_budget > dropped ? in.byzantine_budget - dropped : 0;
    report.effective_budget = b;

    // Pre-aggregators, in order; `members` tracks which inputs each current row stands for
    // (without any, row i stands for input origin[i]).
    std::vector<std::vector<std::size_t>> members;
    Stage stage;
    std::span<const std::span<const float>> current = finite;
    std::vector<std::span<const float>> staged;
    if (!pre_.empty()) {
      members.resize(finite.size());
      for (std::size_t i = 0; i < finite.size(); ++i) members[i] = {origin[i]};
    }
    for (auto& p : pre_) {
      Stage next = p->apply(current, weights, b);
      std::vector<std::vector<std::size_t>> composed;
      for (const auto& m : next.members) {
        std::vector<std::size_t> inputs;
        for (std::size_t j : m) inputs.insert(inputs.end(), members[j].begin(), members[j].end());
        composed.push_back(std::move(inputs));
      }
      members = std::move(composed);
      weights = next.weights;
      stage = std::move(next);
      staged.assign(stage.rows.begin(), stage.rows.end());
      current = staged;
    }

    // Distances to the pivot: the ones already measured, unless pre-aggregators rewrote rows.
    std::vector<double>& to_pivot = scratch.to_pivot;
    to_pivot.clear();
    if (pre_.empty()) {
      for (std::size_t i : origin) to_pivot.push_back(sq[i]);
    } else {
      to_pivot.resize(current.size());
      kernels::squaredDistancesTo(current[0], current, to_pivot);
    }
    std::vector<char>& kept = scratch.kept;
    kept.assign(current.size(), 0);
    const bool z_holds_row_sum = fused && dropped == 0;  // a dropped row spoiled the sum
    if (auto ok = rule_->apply({current, b, weights, to_pivot, z_holds_row_sum, pivot_squared_norm,
                                in.known_distances},
                               out, kept);
        !ok) {
      return std::unexpected(ok.error());
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
      if (!kept[i]) continue;
      if (pre_.empty()) {
        report.kept[origin[i]] = 1;
      } else {
        for (std::size_t j : members[i]) report.kept[j] = 1;
      }
    }
    return report;
  }

 private:
  struct Scratch {
    std::vector<double> sq, weights, to_pivot;
    std::vector<std::span<const float>> finite;
    std::vector<std::size_t> origin;
    std::vector<char> kept;
  };

  std::string name_;
  std::unique_ptr<Rule> rule_;
  std::vector<std::unique_ptr<PreAggregator>> pre_;
};

}  // namespace

bool measuresEveryPair(const AggregatorConfig& c) {
  const auto agg = makeAggregator(c);
  return agg && (*agg)->measuresEveryPair();
}

std::expected<std::unique_ptr<Aggregator>, std::string> makeAggregator(const AggregatorConfig& c) {
  std::unique_ptr<Rule> rule;
  switch (c.rule) {
    case RuleId::kNna:
      rule = makeNna();
      break;
    case RuleId::kNnaRt:
      rule = makeRadialNna();
      break;
    case RuleId::kMean:
      rule = makeMean();
      break;
    case RuleId::kMetropolis:
      rule = makeMetropolis();
      break;
    case RuleId::kCwtm:
      rule = makeTrimmedMean();
      break;
    case RuleId::kCwmed:
      rule = makeMedian();
      break;
    case RuleId::kGm:
      rule = makeGeometricMedian();
      break;
    case RuleId::kKrum:
      rule = makeKrum(false);
      break;
    case RuleId::kMultikrum:
      rule = makeKrum(true);
      break;
    case RuleId::kCc:
      if (!(c.tau > 0)) return std::unexpected("cc: needs a clipping radius tau > 0");
      if (c.iters < 1) return std::unexpected("cc: needs iters >= 1");
      rule = makeCenteredClipping(c.tau, c.iters);
      break;
    case RuleId::kClippedGossip:
      if (!(c.tau >= 0)) return std::unexpected("clipped_gossip: tau must be >= 0 (0: adaptive)");
      rule = makeClippedGossip(c.tau);
      break;
    case RuleId::kClippedGossipHe:  // its radius is computed: tau is not used
      rule = makeClippedGossipHe();
      break;
    case RuleId::kCsPlus:
      rule = makeCsPlus(CsPlusTrim::kNone);
      break;
    case RuleId::kCsPlusRt:
      rule = makeCsPlus(CsPlusTrim::kRadial);
      break;
    case RuleId::kCsPlusPt:
      rule = makeCsPlus(CsPlusTrim::kPrincipal);
      break;
    case RuleId::kCsPlusRpt:
      rule = makeCsPlus(CsPlusTrim::kBoth);
      break;
    case RuleId::kCsPlusSt:
      rule = makeCsPlus(CsPlusTrim::kSelected);
      break;
    case RuleId::kGts:
      rule = makeGts(GtsBoundary::kWhatFits);
      break;
    case RuleId::kIos:
      rule = makeIos();
      break;
    case RuleId::kGtsExcess:
      rule = makeGts(GtsBoundary::kExcess);
      break;
  }
  if (!rule) return std::unexpected(fmt::format("unknown rule id {}", int(c.rule)));
  std::vector<std::unique_ptr<PreAggregator>> pre;
  std::uint64_t seed = c.seed;
  for (const auto& spec : c.pre) {
    auto p = makePreAggregator(spec, seed++);
    if (!p) return std::unexpected(p.error());
    pre.push_back(std::move(*p));
  }
  std::string name(kRules.name(c.rule));
  for (const auto& spec : c.pre) name = preSpecText(spec) + "+" + name;
  return std::make_unique<Pipeline>(std::move(name), std::move(rule), std::move(pre));
}

}  // namespace phalanx::robust
