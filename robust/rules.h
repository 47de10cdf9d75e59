// The rules themselves, on finite rows with the pivot first (internal to robust/).
// Each writes z and marks kept rows; the Aggregator around them handles the rest.
#pragma once

#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "robust/aggregator.h"

namespace phalanx::robust {

struct RuleInput {
  Rows rows;                         // finite; rows[0] is the pivot
  std::size_t b = 0;                 // budget left after non-finite rows were dropped
  std::span<const double> weights;   // per row, row 0 included (its entry unused); never empty
  std::span<const double> to_pivot;  // ‖rows[k] - rows[0]‖², computed once by the pipeline
  // True when z already holds Σ_k rows[k] (summed in float, in the distance pass), offered to
  // rules whose sumsAllRows() is true; such a rule may finish from it instead of rereading.
  bool z_holds_row_sum = false;
  double pivot_squared_norm = 0;  // ‖rows[0]‖², set with z_holds_row_sum
  const kernels::KnownDistances* known_distances = nullptr;  // MixInput's, passed on
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual std::expected<void, std::string> apply(const RuleInput& in, std::span<float> z,
                                                 std::vector<char>& kept) = 0;
  // Whether the rule can use Σ rows handed over in z (see RuleInput::z_holds_row_sum).
  virtual bool sumsAllRows() const { return false; }
  // Whether it measures every pair of rows (and so reads RuleInput::known_distances).
  virtual bool measuresEveryPair() const { return false; }
};

std::unique_ptr<Rule> makeNna();
std::unique_ptr<Rule> makeMean();
std::unique_ptr<Rule> makeMetropolis();
std::unique_ptr<Rule> makeTrimmedMean();
std::unique_ptr<Rule> makeMedian();
std::unique_ptr<Rule> makeGeometricMedian();
std::unique_ptr<Rule> makeKrum(bool multi);
std::unique_ptr<Rule> makeCenteredClipping(double tau, int iters);
std::unique_ptr<Rule> makeClippedGossip(double tau);  // tau 0: adaptive
// ClippedGossip with He, Karimireddy and Jaggi's practical radius in its weighted form, as the
// robust-gossip reference's ClippedGossip baseline (CShe_RG) computes it: τ² = Σ w_k d_k² / B
// over the rows nearest the pivot whose weight stays below W − B (ALGORITHMS.md §2).
std::unique_ptr<Rule> makeClippedGossipHe();
// CS+-RG alone (cs_plus), with the radial trim (cs_plus_rt), the principal trim (cs_plus_pt) or
// both (cs_plus_rpt), or the one of the two that moves the mix more, chosen per mix (cs_plus_st).
enum class CsPlusTrim { kNone, kRadial, kPrincipal, kBoth, kSelected };
std::unique_ptr<Rule> makeCsPlus(CsPlusTrim trim);
std::unique_ptr<Rule> makeRadialNna();
// GTS-RG: the nearest rows up to weight W − B; the boundary row with the part of its weight
// that fits (gts), or with the excess beyond W − B, as the robust-gossip reference's code does
// (gts_excess; ALGORITHMS.md §2).
enum class GtsBoundary : std::uint8_t { kWhatFits, kExcess };
std::unique_ptr<Rule> makeGts(GtsBoundary boundary);
std::unique_ptr<Rule> makeIos();

// CLIP(v, tau) = v * min(1, tau/‖v‖) applied to v = a - c, given ‖a - c‖; the factor to use.
// Zero when the norm is not finite (ALGORITHMS.md's convention).
double clipFactor(double norm, double tau);

// Indices 0..n-1 sorted by (key, index): ties by index.
std::vector<std::size_t> orderByKey(std::span<const double> key);

}  // namespace phalanx::robust
