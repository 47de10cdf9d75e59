// Round deadlines: a fixed ceiling, or adaptive — median + k·MAD of the offsets observed in
// recent rounds, clamped to [min_ms, the ceiling]. What an offset measures is the gate's choice
// (RoundGate: when each round's honest quorum was in). Owned by the node's network thread.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

namespace phalanx::net {

struct DeadlineConfig {
  double fixed_ms = 3000;  // the ceiling: a round never waits longer
  bool adaptive = false;   // estimate the early close from arrivals (else: the ceiling)
  double k = 4;            // MADs above the median
  double min_ms = 20;
  std::size_t history = 256;    // offsets remembered
  std::size_t min_samples = 4;  // below this, the ceiling
};

class DeadlineEstimator {
 public:
  explicit DeadlineEstimator(DeadlineConfig config) : config_(config) {}

  // An arrival offset in milliseconds.
  void observe(double offset_ms);

  // The adaptive estimate (median + k·MAD, clamped), or the ceiling when not adaptive or with
  // too few samples.
  double deadlineMs() const;
  double ceilingMs() const { return config_.fixed_ms; }

  // The offsets remembered, oldest first: a checkpoint keeps them, so a restarted node paces
  // its rounds as before instead of waiting out the ceiling until it has seen enough again.
  std::vector<double> offsets() const { return {offsets_.begin(), offsets_.end()}; }

 private:
  DeadlineConfig config_;
  std::deque<double> offsets_;
};

}  // namespace phalanx::net
