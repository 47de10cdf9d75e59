// `phalanx launch --churn RATE`: which honest peer to kill when, and when to bring it back. Kills
// come as a Poisson process of RATE per minute over the run, each on a running honest peer drawn
// at random; a killed peer restarts (with --resume, from its checkpoint) `down` later. Pure and
// seeded: the caller says what time it is and which peers run; launch does the signalling.
// Not thread-safe; one per launch.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace phalanx::tools {

class Churn {
 public:
  using Clock = std::chrono::steady_clock;

  // `per_minute` > 0; the first kill is one draw after `start`.
  Churn(double per_minute, std::chrono::milliseconds down, std::uint64_t seed,
        Clock::time_point start);

  // The peer to kill now, if a kill is due: one of `candidates` (running honest peers, down ones
  // excluded by the caller). None when fewer than 2 run (somebody must be left to rejoin); the
  // kill then waits for the next draw.
  std::optional<std::uint32_t> killDue(Clock::time_point now,
                                       const std::vector<std::uint32_t>& candidates);
  // Peers whose downtime is over, each once, in id order; those in `not_yet` (their killed
  // process not reaped yet) stay due for a later call.
  std::vector<std::uint32_t> restartsDue(Clock::time_point now,
                                         const std::set<std::uint32_t>& not_yet = {});
  bool down(std::uint32_t peer) const { return back_at_.contains(peer); }
  bool anyDown() const { return !back_at_.empty(); }
  std::size_t kills() const { return kills_; }
  double downSeconds() const { return std::chrono::duration<double>(down_).count(); }

 private:
  void drawNext(Clock::time_point from);

  double per_second_;
  std::chrono::milliseconds down_;
  std::mt19937_64 rng_;
  Clock::time_point next_kill_;
  std::map<std::uint32_t, Clock::time_point> back_at_;
  std::size_t kills_ = 0;
};

}  // namespace phalanx::tools
