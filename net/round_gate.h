// One round's wait (DESIGN.md "Rounds over a real network"): collects the round's messages in
// a RoundInbox and hands them over once every live neighbour has spoken (with at least one
// live), or when the round's
// deadline (fixed or adaptive, DeadlineEstimator) passes — so a crashed or slow peer costs at
// most one deadline and never stalls the round loop. Owned by the node's network thread;
// every method on the io_context's thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "net/deadline.h"
#include "net/inbox.h"
#include "net/transport.h"

namespace phalanx::net {

struct RoundResult {
  std::uint64_t round = 0;
  std::map<std::uint32_t, v1::RoundMessage> messages;  // by sender
  std::vector<std::uint32_t> missing;                  // neighbours not heard from
  bool deadline_hit = false;
  double seconds = 0;  // from wait() to completion
};

class RoundGate {
 public:
  RoundGate(asio::io_context& io, const Transport& transport, std::span<const std::uint32_t> neighbours,
            DeadlineConfig deadline, std::uint64_t first_round, std::uint64_t window);

  // Feed every RoundMessage the transport delivers.
  Admission add(v1::RoundMessage&& message);

  // Waits for the open round; `done` runs once, on completion or at the deadline, and the
  // next round opens. One wait at a time.
  void wait(std::function<void(RoundResult&&)> done);

  // Drops the pending wait (its `done` never runs) and its deadline timer: the node is leaving.
  void cancel();

  // Re-checks completion: call when a peer goes down, so it no longer blocks the round.
  void poke();

  // A restarted or lagging node adopts its neighbours' round (from their heartbeats).
  void advanceTo(std::uint64_t round) { inbox_.advanceTo(round); }

  // The latest round a neighbour is known to be in (its messages do this themselves; feed
  // heartbeats here). When a round ends, a node behind the median of its live neighbours'
  // rounds jumps to it: a restarted or slow node catches up, and a minority of peers lying
  // about their round cannot drag it anywhere.
  void noteRound(std::uint32_t sender, std::uint64_t round);
  // Whether `peer`'s round is known (it has sent a heartbeat or a message).
  bool knowsRoundOf(std::uint32_t peer) const { return latest_.contains(peer); }
  // Whether `peer` is known to have reached `round`.
  bool hasReached(std::uint32_t peer, std::uint64_t round) const {
    const auto it = latest_.find(peer);
    return it != latest_.end() && it->second >= round;
  }
  // The jump above, on demand (a node about to start its first round). True when it moved.
  bool catchUp();

  std::uint64_t openRound() const { return inbox_.openRound(); }
  const RoundInbox& inbox() const { return inbox_; }
  double deadlineMs() const { return deadline_.deadlineMs(); }
  std::uint64_t deadlineMisses() const { return deadline_misses_; }

 private:
  void finish(bool deadline_hit);

  const Transport& transport_;
  std::vector<std::uint32_t> neighbours_;
  RoundInbox inbox_;
  DeadlineEstimator deadline_;
  asio::steady_timer timer_;
  std::function<void(RoundResult&&)> done_;
  std::chrono::steady_clock::time_point opened_;
  std::uint64_t generation_ = 0;  // stale timer callbacks compare against it
  std::uint64_t deadline_misses_ = 0;
  std::map<std::uint32_t, std::uint64_t> latest_;  // by neighbour
};

}  // namespace phalanx::net
