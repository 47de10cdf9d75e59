#include "net/round_gate.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace phalanx::net {

RoundGate::RoundGate(Clock& clock, const Transport& transport,
                     std::span<const std::uint32_t> neighbours, GateConfig config,
                     std::uint64_t first_round)
    : clock_(clock),
      transport_(transport),
      neighbours_(neighbours.begin(), neighbours.end()),
      config_(config),
      inbox_(neighbours, first_round, config.window),
      deadline_(config.deadline),
      timer_(clock.timer()) {}

void RoundGate::noteRound(std::uint32_t sender, std::uint64_t round) {
  if (std::find(neighbours_.begin(), neighbours_.end(), sender) == neighbours_.end()) return;
  auto& latest = latest_[sender];
  if (round > latest) {
    latest = round;
    changed();
  }
  // Behind: more than b neighbours are past the next round, so nothing more is coming for this
  // one (a neighbour's claim follows its messages on the same connection). Checked at every
  // claim, not only at a higher one: a claim held back while its connection settled counts at
  // the next heartbeat.
  if (done_ && round >= inbox_.openRound() + 2 && evidencedRound() >= inbox_.openRound() + 2) {
    finish(Close::kBehind);
  }
}

Admission RoundGate::add(Received&& message) {
  const std::uint32_t sender = message.sender();
  const std::uint64_t round = message.round();
  const bool for_open = round == inbox_.openRound();
  const Admission a = inbox_.add(std::move(message));
  if (a == Admission::kAccepted && for_open && done_) {
    if (pace_pending_ && inbox_.heardCount() >= pacedBy()) {
      pace_pending_ = false;
      deadline_.observe(elapsedMs());
    }
    poke();
  }
  noteRound(sender, round);  // last: it may close the round, and the message is in by then
  if (a == Admission::kAccepted) changed();
  return a;
}

void RoundGate::noteLate(std::uint32_t sender, std::uint64_t round) {
  const auto it = std::find_if(closed_.begin(), closed_.end(),
                               [&](const Closed& c) { return c.round == round; });
  if (it == closed_.end()) return;
  const auto missing = std::find(it->missing.begin(), it->missing.end(), sender);
  if (missing == it->missing.end()) return;  // heard in time, or already noted
  it->missing.erase(missing);
  if (!it->pace_pending || neighbours_.size() - it->missing.size() < pacedBy()) return;
  it->pace_pending = false;
  deadline_.observe(std::min(millisecondsBetween(it->opened, clock_.now()), ceilingMs()));
}

std::size_t RoundGate::pacedBy() const {
  return neighbours_.size() > config_.budget ? neighbours_.size() - config_.budget : 1;
}

void RoundGate::openPaceSample() {
  const auto live = transport_.livePeers();
  const bool behind = (!live.empty() && inbox_.complete(live)) || (waits_ > 1 && quorumMet(live));
  pace_pending_ = !behind;
  if (pace_pending_ && inbox_.heardCount() >= pacedBy()) {
    pace_pending_ = false;
    deadline_.observe(0);
  }
}

double RoundGate::paceFloorMs() const {
  if (config_.pace_fraction <= 0 || paces_ms_.size() < config_.pace_min_samples) return 0;
  std::vector<double> paces(paces_ms_.begin(), paces_ms_.end());
  const auto mid = paces.begin() + std::ptrdiff_t(paces.size() / 2);
  std::nth_element(paces.begin(), mid, paces.end());
  return config_.pace_fraction * *mid;
}

double RoundGate::elapsedMs() const { return millisecondsBetween(opened_, clock_.now()); }

void RoundGate::arm(double at_ms) {
  const std::uint64_t generation = generation_;
  const double in_ms = std::max(0.0, at_ms - elapsedMs());
  // Rounded up to the clock's tick, and compared with a tick's slack: a timer that fires a hair
  // early by rounding must close the round, not re-arm for 0 ns (in virtual time, where the
  // clock does not move on its own, that would spin forever).
  constexpr double kTickMs = 1e-6;
  timer_->start(std::chrono::nanoseconds(std::int64_t(std::ceil(in_ms * 1e6))), [this, generation] {
    if (generation != generation_ || !done_) return;  // a later round's wait
    const double now = elapsedMs() + kTickMs;
    if (grace_end_ms_ >= 0 && now >= grace_end_ms_) return finish(Close::kQuorum);
    if (now >= deadline_ms_) return finish(Close::kDeadline);
    arm(grace_end_ms_ >= 0 ? std::min(grace_end_ms_, deadline_ms_) : deadline_ms_);
  });
}

void RoundGate::wait(std::function<void(RoundResult&&)> done) {
  done_ = std::move(done);
  opened_ = clock_.now();
  ++generation_;
  ++waits_;
  deadline_ms_ = deadline_.deadlineMs();
  grace_end_ms_ = -1;
  openPaceSample();
  arm(deadline_ms_);
  poke();  // messages for this round may already be buffered
}

std::uint64_t RoundGate::evidencedRound() const {
  std::vector<std::uint64_t> rounds;
  const Clock::TimePoint now = clock_.now();
  const bool settle = !transport_.authenticated() && config_.claim_settle_ms > 0;
  for (const std::uint32_t peer : transport_.livePeers()) {
    const auto up = up_since_.find(peer);
    if (settle && up != up_since_.end() &&
        millisecondsBetween(up->second, now) < config_.claim_settle_ms)
      continue;  // its connection is too young to speak for it
    if (const auto it = latest_.find(peer); it != latest_.end()) rounds.push_back(it->second);
  }
  if (rounds.size() <= config_.budget) return 0;
  // The (b+1)-th highest claim: b liars alone cannot raise it above an honest neighbour's round.
  const auto at = rounds.begin() + std::ptrdiff_t(config_.budget);
  std::nth_element(rounds.begin(), at, rounds.end(), std::greater<>());
  return std::min(*at, config_.last_round);
}

bool RoundGate::catchUp() {
  const std::uint64_t target = evidencedRound();
  if (target <= inbox_.openRound()) return false;
  for (auto& m : inbox_.advanceTo(target)) skipped_.push_back(std::move(m));
  return true;
}

void RoundGate::cancel() {
  timer_->cancel();
  done_ = nullptr;
  wake_ = nullptr;
  ++generation_;
}

bool RoundGate::quorumMet(std::span<const std::uint32_t> live) const {
  if (config_.quorum == 0) return false;
  // A neighbour that is down cannot be one of the b stragglers the quorum leaves room for: a
  // crashed honest peer would use that room up, and its neighbours, now waiting for every live
  // one, fell behind the rest, skipped rounds to catch up and left holes in their own
  // neighbours' rounds for as long as it was down. So each awaited neighbour that is down
  // lowers the quorum by one (deg − b over the live ones), down to b + 1. A Byzantine peer that
  // disconnects lowers it by one, and is then one liar fewer among the vectors heard.
  const auto up = std::size_t(std::count_if(live.begin(), live.end(), [&](std::uint32_t p) {
    return std::find(neighbours_.begin(), neighbours_.end(), p) != neighbours_.end();
  }));
  const std::size_t down = neighbours_.size() - std::min(up, neighbours_.size());
  const std::size_t at_least = config_.budget + 1;
  const std::size_t lowered = config_.quorum > down ? config_.quorum - down : 0;
  return inbox_.heardCount() >= std::min(config_.quorum, std::max(lowered, at_least));
}

void RoundGate::changed() {
  if (wake_) clock_.post(std::exchange(wake_, nullptr));
}

void RoundGate::linkUp(std::uint32_t peer) {
  latest_.erase(peer);
  inbox_.forget(peer);
  up_since_[peer] = clock_.now();
}

void RoundGate::poke() {
  changed();
  if (!done_) return;
  // With nobody connected, the round waits for its deadline: a node alone (starting up,
  // or cut off) must not spin through rounds.
  const auto live = transport_.livePeers();
  if (!live.empty() && inbox_.complete(live)) return finish(Close::kComplete);
  if (grace_end_ms_ >= 0 || waits_ <= 1 || !quorumMet(live)) return;
  // The quorum is in: up to b more may come within the grace, then the round closes.
  const double now = elapsedMs();
  grace_end_ms_ =
      std::max(now + std::max(config_.grace_fraction * now, config_.grace_min_ms), paceFloorMs());
  if (grace_end_ms_ < deadline_ms_) arm(grace_end_ms_);
}

void RoundGate::finish(Close why) {
  timer_->cancel();
  RoundResult result;
  result.round = inbox_.openRound();
  result.closed = why;
  result.deadline_hit = why == Close::kDeadline;
  result.seconds = elapsedMs() / 1000;
  result.messages = inbox_.close();
  for (const std::uint32_t n : neighbours_) {
    if (!result.messages.contains(n)) result.missing.push_back(n);
  }
  if (result.deadline_hit) ++deadline_misses_;
  // Deadline and catch-up rounds say how long a fault lasted, not the pace: kept, they would
  // hold the floor up for rounds after a partition heals.
  if ((why == Close::kComplete || why == Close::kQuorum) && waits_ > 1) {
    paces_ms_.push_back(elapsedMs());
    while (paces_ms_.size() > config_.pace_history) paces_ms_.pop_front();
  }
  closed_.push_back({result.round, opened_, result.missing, pace_pending_});
  pace_pending_ = false;
  while (closed_.size() > config_.window) closed_.pop_front();
  catchUp();
  auto done = std::move(done_);
  done_ = nullptr;
  ++generation_;
  done(std::move(result));
}

}  // namespace phalanx::net
