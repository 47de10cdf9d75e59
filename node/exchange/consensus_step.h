// gamma: auto for CHOCO model gossip (docs/ALGORITHMS.md §3.3): the codec's contraction measured
// on this peer's own deltas, averaged, times a back-off that halves when the replica's residual
// grows.
#pragma once

#include <limits>
#include <optional>

#include "train/checkpoint.h"

namespace phalanx::node {

class AutoConsensusStep {
 public:
  static constexpr float kAverageWeight = 0.1f;    // contraction: about ten rounds
  static constexpr float kResidualWeight = 0.05f;  // log residual: about twenty rounds
  static constexpr float kArmBelow = 0.99f;        // armed once the average fell 1 % from its peak
  static constexpr float kGrowth = 1.5f;           // residual over its low this much: back off
  static constexpr float kMinScale = 1.0f / 16;    // at most four halvings

  // One round's measurements on this peer's own delta (PublicReplica::contraction, ::residual),
  // this round's included in the step that follows; a non-finite value is ignored.
  void observe(double contraction, double residual);
  // clamp(scale · average contraction, 10⁻³, 1), capped at 1/(1 + ω) for an unbiased codec.
  double step(std::optional<double> variance_factor) const;
  // The codec's level changed (Accordion): the residual's level moves by design, so the back-off
  // watches it afresh from the next round (not armed, no low); the scale and contraction stay.
  void codecChanged();
  float scale() const { return scale_; }

  // Checkpoint section `consensus_step`; restore leaves the state fresh when it is absent or
  // malformed (gamma: auto then starts over, which is safe).
  void save(train::Checkpoint& c) const;
  void restore(const train::Checkpoint& c);

 private:
  static constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  // Floats, so that a checkpoint holds them exactly and a resumed run steps the same γ.
  float contraction_avg_ = kNaN;
  float residual_avg_ = kNaN;                                      // of log ‖y − ŷ‖
  float residual_peak_ = -std::numeric_limits<float>::infinity();  // until armed: the highest
  float residual_low_ = kNaN;  // armed: the lowest since arming or the last back-off
  float scale_ = 1;
};

}  // namespace phalanx::node
