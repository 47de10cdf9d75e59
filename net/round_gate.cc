#include "net/round_gate.h"

#include <algorithm>

namespace phalanx::net {

using Clock = std::chrono::steady_clock;

RoundGate::RoundGate(asio::io_context& io, const Transport& transport, std::span<const std::uint32_t> neighbours,
                     DeadlineConfig deadline, std::uint64_t first_round, std::uint64_t window)
    : transport_(transport),
      neighbours_(neighbours.begin(), neighbours.end()),
      inbox_(neighbours, first_round, window),
      deadline_(deadline),
      timer_(io) {}

void RoundGate::noteRound(std::uint32_t sender, std::uint64_t round) {
  if (std::find(neighbours_.begin(), neighbours_.end(), sender) == neighbours_.end()) return;
  auto& latest = latest_[sender];
  latest = std::max(latest, round);
}

Admission RoundGate::add(v1::RoundMessage&& message) {
  noteRound(message.sender(), message.round());
  const bool for_open = message.round() == inbox_.openRound();
  const Admission a = inbox_.add(std::move(message));
  if (a == Admission::kAccepted && for_open && done_) {
    deadline_.observe(std::chrono::duration<double, std::milli>(Clock::now() - opened_).count());
    poke();
  }
  return a;
}

void RoundGate::wait(std::function<void(RoundResult&&)> done) {
  done_ = std::move(done);
  opened_ = Clock::now();
  const std::uint64_t generation = ++generation_;
  timer_.expires_after(std::chrono::microseconds(std::int64_t(deadline_.deadlineMs() * 1000)));
  timer_.async_wait([this, generation](const asio::error_code& ec) {
    if (ec || generation != generation_ || !done_) return;  // cancelled, or a later round's wait
    finish(true);
  });
  poke();  // messages for this round may already be buffered
}

bool RoundGate::catchUp() {
  // Behind the live neighbours' median round: catch up (the skipped rounds' messages are stale).
  std::vector<std::uint64_t> rounds;
  for (const std::uint32_t peer : transport_.livePeers()) {
    if (const auto it = latest_.find(peer); it != latest_.end()) rounds.push_back(it->second);
  }
  if (rounds.empty()) return false;
  std::nth_element(rounds.begin(), rounds.begin() + std::ptrdiff_t(rounds.size() / 2), rounds.end());
  const std::uint64_t median = rounds[rounds.size() / 2];
  if (median <= inbox_.openRound()) return false;
  inbox_.advanceTo(median);
  return true;
}

void RoundGate::cancel() {
  timer_.cancel();
  done_ = nullptr;
  ++generation_;
}

void RoundGate::poke() {
  if (!done_) return;
  // With nobody connected, the round waits for its deadline: a node alone (starting up,
  // or cut off) must not spin through rounds.
  const auto live = transport_.livePeers();
  if (!live.empty() && inbox_.complete(live)) finish(false);
}

void RoundGate::finish(bool deadline_hit) {
  timer_.cancel();
  RoundResult result;
  result.round = inbox_.openRound();
  result.deadline_hit = deadline_hit;
  result.seconds = std::chrono::duration<double>(Clock::now() - opened_).count();
  result.messages = inbox_.close();
  for (const std::uint32_t n : neighbours_) {
    if (!result.messages.contains(n)) result.missing.push_back(n);
  }
  if (deadline_hit) ++deadline_misses_;
  catchUp();
  auto done = std::move(done_);
  done_ = nullptr;
  ++generation_;
  done(std::move(result));
}

}  // namespace phalanx::net
