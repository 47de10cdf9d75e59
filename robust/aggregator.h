// Robust mixing rules (ALGORITHMS.md §2) behind one interface, chosen by name, with optional
// pre-aggregators composed in front. Pure: no I/O, no clocks; deterministic given the seed.
// An Aggregator is owned by one node and called from one thread (cc and bucketing keep state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/names.h"
#include "kernels/batch_ops.h"
#include "robust/pre_spec.h"

namespace phalanx::robust {

using kernels::Rows;

enum class RuleId : std::uint8_t {
  kNna,
  kNnaRt,
  kMean,
  kMetropolis,
  kCwtm,
  kCwmed,
  kGm,
  kKrum,
  kMultikrum,
  kCc,
  kClippedGossip,
  kClippedGossipHe,
  kCsPlus,
  kCsPlusRt,
  kCsPlusPt,
  kCsPlusRpt,
  kCsPlusSt,
  kGts,
  kIos,
  kGtsExcess,
};
// The names ALGORITHMS.md uses.
inline constexpr auto kRules =
    base::nameTable<RuleId>({{RuleId::kNna, "nna"},
                             {RuleId::kNnaRt, "nna_rt"},
                             {RuleId::kMean, "mean"},
                             {RuleId::kMetropolis, "metropolis"},
                             {RuleId::kCwtm, "cwtm"},
                             {RuleId::kCwmed, "cwmed"},
                             {RuleId::kGm, "gm"},
                             {RuleId::kKrum, "krum"},
                             {RuleId::kMultikrum, "multikrum"},
                             {RuleId::kCc, "cc"},
                             {RuleId::kClippedGossip, "clipped_gossip"},
                             {RuleId::kClippedGossipHe, "clipped_gossip_he"},
                             {RuleId::kCsPlus, "cs_plus"},
                             {RuleId::kCsPlusRt, "cs_plus_rt"},
                             {RuleId::kCsPlusPt, "cs_plus_pt"},
                             {RuleId::kCsPlusRpt, "cs_plus_rpt"},
                             {RuleId::kCsPlusSt, "cs_plus_st"},
                             {RuleId::kGts, "gts"},
                             {RuleId::kIos, "ios"},
                             {RuleId::kGtsExcess, "gts_excess"}});

struct AggregatorConfig {
  RuleId rule = RuleId::kNna;
  std::vector<PreSpec> pre;  // applied in order (robust/pre_spec.h)
  double tau = 0;            // cc: clipping radius (> 0); clipped_gossip: 0 = adaptive
  int iters = 1;             // cc: L
  std::uint64_t seed = 1;    // bucketing's shuffles
};

struct MixInput {
  // rows[0] is the pivot (the node's own vector); rows[1..] the vectors heard this round.
  // Any number of peers, zero included. All rows have the same length.
  Rows rows;
  // b: how many of the rows may be Byzantine.
  std::size_t byzantine_budget = 0;
  // Mixing weights W_ij per row (row 0: unused; metropolis puts what is missing on self).
  // Empty: 1/|S| each, i.e. a complete graph among the rows.
  std::span<const double> weights;
  // Distances between rows that the caller measured before and promises unchanged (an
  // attacker's line search: its honest rows); rules that measure every pair take them from here.
  const kernels::KnownDistances* known_distances = nullptr;
  // The same caller's promise for its leading rows (the honest ones of a line search): the
  // distances to the pivot (and, for rules that sum every row, the sum) measured of them are
  // kept here, and only the other rows are read next time.
  kernels::RowPrefix* row_prefix = nullptr;
};

// What a rule did with each row (index as in MixInput::rows; row 0 is the pivot).
struct MixReport {
  std::vector<char> kept;            // 1: the row entered the mix (possibly clipped or trimmed)
  std::vector<char> nonfinite;       // 1: the row held NaN/Inf and was dropped
  std::vector<double> distance;      // ‖row - pivot‖; +inf for non-finite rows
  std::size_t effective_budget = 0;  // b the rule ran with: max(0, b - non-finite rows)
};

class Aggregator {
 public:
  virtual ~Aggregator() = default;

  // Writes the mix z into `out` (length of the rows). Errors (never UB): length mismatch,
  // non-finite pivot, or b too large for the rule (e.g. cwtm with 2b >= |S|). Rows holding
  // NaN/Inf are dropped before the rule runs and use up budget: b' = max(0, b - dropped) —
  // the same outcome as "infinitely far" for distance rules whenever at most b are bad.
  // After an error `out` holds no mix (it may have been used as scratch): keep the old vector.
  virtual std::expected<MixReport, std::string> mix(const MixInput& in, std::span<float> out) = 0;

  virtual std::string_view name() const = 0;
  // Whether the rule measures every pair of the rows it is handed (krum, multikrum, the
  // principal trim) — without pre-aggregators, whose outputs are new rows —, so that a caller
  // mixing one set of rows many times gains by handing it MixInput::known_distances.
  virtual bool measuresEveryPair() const = 0;
};

// Aggregator::measuresEveryPair of the configured aggregator (false if it does not build).
bool measuresEveryPair(const AggregatorConfig& c);

std::expected<std::unique_ptr<Aggregator>, std::string> makeAggregator(const AggregatorConfig& c);

}  // namespace phalanx::robust
