#include "net/deadline.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace phalanx::net {
namespace {

double median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid));
  return (lower + upper) / 2;
}

}  // namespace

void DeadlineEstimator::observe(double offset_ms) {
  if (!std::isfinite(offset_ms) || offset_ms < 0) return;
  offsets_.push_back(offset_ms);
  while (offsets_.size() > config_.history) offsets_.pop_front();
}

double DeadlineEstimator::deadlineMs() const {
  if (!config_.adaptive || offsets_.size() < config_.min_samples) return config_.fixed_ms;
  std::vector<double> v(offsets_.begin(), offsets_.end());
  const double m = median(v);
  for (double& x : v) x = std::abs(x - m);
  const double mad = median(std::move(v));
  return std::clamp(m + config_.k * mad, std::min(config_.min_ms, config_.fixed_ms),
                    config_.fixed_ms);
}

}  // namespace phalanx::net
