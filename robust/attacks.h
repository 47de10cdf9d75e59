// Byzantine attacks (ALGORITHMS.md §4): what a Byzantine node sends, computed from the honest
// vectors it knows. Chosen by name through a factory. Pure; deterministic given the seed.
// An Attack is owned by one Byzantine node and called from one thread (gaussian draws advance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "robust/aggregator.h"

namespace phalanx::robust {

// Vector attacks of this library. labelflip (training on flipped labels), the process and
// timing faults and the wire and protocol attacks live in node/ (node/attack_spec.h).
enum class AttackId : std::uint8_t {
  kSignflip,
  kIpm,
  kFoe,
  kAlie,
  kOptAlie,
  kOptIpm,
  kOptFoe,
  kEmpire,
  kMimic,
  kDissensus,
  kOptDissensus,
  kSpectral,
  kGaussian,
  kNan,
  kInf,
  kZero,
  kHuge,
};
inline constexpr auto kAttacks =
    base::nameTable<AttackId>({{AttackId::kSignflip, "signflip"},
                               {AttackId::kIpm, "ipm"},
                               {AttackId::kFoe, "foe"},
                               {AttackId::kAlie, "alie"},
                               {AttackId::kOptAlie, "opt_alie"},
                               {AttackId::kOptIpm, "opt_ipm"},
                               {AttackId::kOptFoe, "opt_foe"},
                               {AttackId::kEmpire, "empire"},
                               {AttackId::kMimic, "mimic"},
                               {AttackId::kDissensus, "dissensus"},
                               {AttackId::kOptDissensus, "opt_dissensus"},
                               {AttackId::kSpectral, "spectral"},
                               {AttackId::kGaussian, "gaussian"},
                               {AttackId::kNan, "nan"},
                               {AttackId::kInf, "inf"},
                               {AttackId::kZero, "zero"},
                               {AttackId::kHuge, "huge"}});

// The value the `huge` attack sends in every coordinate: finite, but far beyond any model.
inline constexpr float kHugeValue = 1e30f;

struct AttackConfig {
  AttackId attack = AttackId::kSignflip;
  std::optional<double> tau;  // ipm: 2.0; foe: 0.1; alie: 1.5 (or z, below); others ignore it
  bool alie_z = false;        // alie: tau = Φ⁻¹((n - f - s)/(n - f)), s = floor(n/2 + 1) - f
  std::size_t n = 0;          // nodes in all, for alie_z
  std::size_t f = 1;          // Byzantine nodes: alie_z
  // opt_* / empire searches: the attack rows in the mix searched against (0: f). A node sets the
  // most Byzantine neighbours any honest peer has: f on a complete graph, 1 on a torus where
  // no honest peer has two — the mix the attack lands in, not one with every attacker in it.
  std::size_t copies = 0;
  double sigma = 1.0;          // gaussian
  bool scale_to_mean = false;  // gaussian: sigma = ‖μ‖ / √d
  std::size_t mimic = 0;       // mimic: which honest vector to copy
  double eps = 1.5;            // dissensus (opt_dissensus searches it)
  // opt_alie / opt_ipm / opt_foe: the search averages every honest pivot's mix, as empire does
  bool every_pivot = false;
  std::uint64_t seed = 1;  // gaussian
  // opt_alie / opt_ipm / opt_foe / empire / spectral / opt_dissensus: the rule under attack
  // (its pre-aggregators included) and its b.
  AggregatorConfig target;
  std::size_t target_b = 0;
  int evals = 20;
};

// Target i's neighbourhood, for per-target attacks (dissensus, spectral).
struct TargetView {
  std::span<const float> target;           // x_i
  Rows honest_neighbours;                  // x_j for i's honest neighbours
  std::span<const double> honest_weights;  // W_ij for them
  double byzantine_weight = 0;             // Σ_b W_ib over i's Byzantine neighbours (> 0)
  std::size_t byzantine_count = 1;         // spectral: i's Byzantine neighbours (the copies)
  std::size_t budget = 0;                  // spectral: b_i, the budget i's rule runs with
  double fiedler = 0;                      // spectral: v_i
};

struct AttackInput {
  Rows honest;                         // the honest vectors the attacker knows; μ, σ over them
  const TargetView* target = nullptr;  // required by per-target attacks
  // spectral: v_k for each honest row, the Fiedler vector of the honest graph (ALGORITHMS.md §4)
  std::span<const double> honest_fiedler = {};
};

class Attack {
 public:
  virtual ~Attack() = default;
  // Writes the vector to send into `out`. Errors: too few honest vectors, missing target
  // view, length mismatch.
  virtual std::expected<void, std::string> craft(const AttackInput& in, std::span<float> out) = 0;
  virtual std::string_view name() const = 0;
  // True when the vector depends on the receiver (dissensus): craft once per target.
  virtual bool perTarget() const { return false; }
  // True when craft keeps nothing from one call to the next (no random stream, no cache): calls
  // for different targets may then run at once and give what they give one after another.
  virtual bool reentrant() const { return false; }
};

std::expected<std::unique_ptr<Attack>, std::string> makeAttack(const AttackConfig& c);

// The line search of ALGORITHMS.md §4, exactly: maximizes F from `start` with `evals`
// evaluations, first doubling delta, then shrinking it by `ratio`. Returns the best tau.
double lineSearch(const std::function<double(double)>& F, int evals, double start = 0.0,
                  double delta = 10.0, double ratio = 0.8);

// The search of the MoNNA and robust-gossip reference codes (their `line_maximize`): the same
// expansion from `start` by `delta`, then a contraction that steps the last proposal back by
// delta when it is at or past the best (halving towards it while below 0) and forward when it
// is behind, shrinking delta by `ratio` each time. Unlike lineSearch it probes below its first
// step, which the model-space attacks need: a kept FOE vector has tau well under 1.
double lineMaximize(const std::function<double(double)>& F, int evals = 16, double start = 0.0,
                    double delta = 1.0, double ratio = 0.8);

// Per-coordinate mean and standard deviation (ddof = 1) of the rows.
void meanAndStd(Rows rows, std::span<float> mean, std::span<float> stddev);

}  // namespace phalanx::robust
