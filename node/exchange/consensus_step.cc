#include "node/exchange/consensus_step.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace phalanx::node {

void AutoConsensusStep::observe(double contraction, double residual) {
  if (std::isfinite(contraction)) {
    const float now = float(std::clamp(contraction, 0.0, 1.0));
    contraction_avg_ = std::isnan(contraction_avg_)
                           ? now
                           : contraction_avg_ + kAverageWeight * (now - contraction_avg_);
  }
  if (!std::isfinite(residual) || residual <= 0) return;
  const float r = float(std::log(residual));
  residual_avg_ =
      std::isnan(residual_avg_) ? r : residual_avg_ + kResidualWeight * (r - residual_avg_);
  // The residual ‖y − ŷ‖ rises at first (models leave their common start) and then falls with
  // the learning rate. A step too long for the codec shows as the residual rising again, slowly
  // (ten times over some 250 rounds before the loss moves, in the outer-6000 run), while the
  // contraction — and so the step — rises with it. So: armed once the average has come down 1 %
  // from its first peak (a peer whose residual only plateaus before climbing must still arm);
  // then every time it climbs kGrowth over its low since arming or the last halving, the step
  // halves and the low starts over there. Averaged in logs over about twenty rounds: under an
  // attack or a near-exact codec the residual is the round's own movement, noisy by ±50 %, and a
  // shorter average read that noise as growth (ALGORITHMS.md §3.3).
  if (std::isnan(residual_low_)) {
    residual_peak_ = std::max(residual_peak_, residual_avg_);
    if (residual_avg_ < residual_peak_ + std::log(kArmBelow)) residual_low_ = residual_avg_;
    return;
  }
  residual_low_ = std::min(residual_low_, residual_avg_);
  if (residual_avg_ > residual_low_ + std::log(kGrowth) && scale_ > kMinScale) {
    scale_ = std::max(kMinScale, scale_ / 2);
    residual_low_ = residual_avg_;
  }
}

void AutoConsensusStep::codecChanged() {
  residual_avg_ = kNaN;
  residual_peak_ = -std::numeric_limits<float>::infinity();
  residual_low_ = kNaN;
}

double AutoConsensusStep::step(std::optional<double> variance_factor) const {
  double s = std::isnan(contraction_avg_) ? 1e-3 : double(scale_) * double(contraction_avg_);
  if (variance_factor) s = std::min(s, 1.0 / (1.0 + *variance_factor));
  return std::clamp(s, 1e-3, 1.0);
}

void AutoConsensusStep::save(train::Checkpoint& c) const {
  if (std::isnan(contraction_avg_) && std::isnan(residual_avg_)) return;
  const std::vector<float> state{contraction_avg_, residual_avg_, residual_peak_, residual_low_,
                                 scale_};
  c.putFloats("consensus_step", state);
}

void AutoConsensusStep::restore(const train::Checkpoint& c) {
  *this = AutoConsensusStep{};
  if (!c.has("consensus_step")) {
    // Checkpoints before the back-off kept only the average contraction.
    if (c.has("consensus_contraction")) {
      const auto a = c.floats("consensus_contraction");
      if (a.size() == 1 && a[0] >= 0 && a[0] <= 1) contraction_avg_ = a[0];
    }
    return;
  }
  const auto s = c.floats("consensus_step");
  const auto nanOr = [](float v, bool ok) { return std::isnan(v) || ok; };
  const float inf = std::numeric_limits<float>::infinity();
  if (s.size() != 5 || !nanOr(s[0], s[0] >= 0 && s[0] <= 1) || !nanOr(s[1], std::isfinite(s[1])) ||
      !(std::isfinite(s[2]) || s[2] == -inf) || !nanOr(s[3], std::isfinite(s[3])) ||
      !(s[4] >= kMinScale && s[4] <= 1)) {
    return;
  }
  contraction_avg_ = s[0];
  residual_avg_ = s[1];
  residual_peak_ = s[2];
  residual_low_ = s[3];
  scale_ = s[4];
}

}  // namespace phalanx::node
