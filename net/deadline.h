// Round deadlines: fixed, or adaptive — median + k·MAD of the arrival offsets observed in
// recent rounds (how long after a round opened each neighbour's message came), clamped, so a
// slow or dead peer costs at most a little more than the honest peers' usual spread. Owned by
// the node's network thread.
#pragma once

#include <cstddef>
#include <deque>

namespace phalanx::net {

struct DeadlineConfig {
  double fixed_ms = 3000;
  bool adaptive = false;
  double k = 4;             // MADs above the median
  double min_ms = 20;
  double max_ms = 30000;
  std::size_t history = 256;    // offsets remembered
  std::size_t min_samples = 8;  // below this, the fixed deadline
};

class DeadlineEstimator {
 public:
  explicit DeadlineEstimator(DeadlineConfig config) : config_(config) {}

  // An arrival offset in milliseconds.
  void observe(double offset_ms);

  double deadlineMs() const;

 private:
  DeadlineConfig config_;
  std::deque<double> offsets_;
};

}  // namespace phalanx::net
