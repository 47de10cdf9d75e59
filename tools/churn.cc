#include "tools/churn.h"

namespace phalanx::tools {

Churn::Churn(double per_minute, std::chrono::milliseconds down, std::uint64_t seed,
             Clock::time_point start)
    : per_second_(per_minute / 60.0), down_(down), rng_(seed) {
  drawNext(start);
}

void Churn::drawNext(Clock::time_point from) {
  std::exponential_distribution<double> gap(per_second_);
  next_kill_ =
      from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng_)));
}

std::optional<std::uint32_t> Churn::killDue(Clock::time_point now,
                                            const std::vector<std::uint32_t>& candidates) {
  if (now < next_kill_) return std::nullopt;
  drawNext(now);
  if (candidates.size() < 2) return std::nullopt;
  std::uniform_int_distribution<std::size_t> pick(0, candidates.size() - 1);
  const std::uint32_t victim = candidates[pick(rng_)];
  back_at_[victim] = now + down_;
  ++kills_;
  return victim;
}

std::vector<std::uint32_t> Churn::restartsDue(Clock::time_point now,
                                              const std::set<std::uint32_t>& not_yet) {
  std::vector<std::uint32_t> due;
  for (auto it = back_at_.begin(); it != back_at_.end();) {
    if (it->second <= now && !not_yet.contains(it->first)) {
      due.push_back(it->first);
      it = back_at_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

}  // namespace phalanx::tools
