// One round's wait (DESIGN.md "Rounds over a real network", docs/PROTOCOL.md): collects the
// round's messages in a RoundInbox and hands them over when
//   - every live awaited neighbour has spoken (with at least one live), or
//   - a quorum of them has (deg − b of the live ones: the rule keeps no more honest ones than
//     that anyway) and a grace of a fraction of the time the quorum took, and at least the pace
//     floor, has passed,
//   - or at the deadline (median + k·MAD of recent arrivals, DeadlineEstimator, clamped to the
//     fixed ceiling),
//   - or at once when more than b neighbours claim to have finished the next round too (the
//     node is behind: what they sent for this round has come, in order, before those claims),
// so neither a crashed peer nor up to b Byzantine stragglers set the honest pace. It also keeps
// what each neighbour claims about its round and catches up only on evidence from more than b
// of them, never past the last round. Owned by the node's network thread; every method on the
// clock's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "net/clock.h"
#include "net/deadline.h"
#include "net/inbox.h"
#include "net/transport.h"

namespace phalanx::net {

// Why a round closed.
enum class Close : std::uint8_t {
  kComplete,  // every live awaited neighbour had spoken
  kQuorum,    // a quorum had, and its grace passed
  kDeadline,  // the deadline passed first
  kBehind,    // more than b live neighbours had finished the round after this one: catch up
};

using RoundMessages = std::map<std::uint32_t, Received>;  // by sender

struct RoundResult {
  std::uint64_t round = 0;
  RoundMessages messages;
  std::vector<std::uint32_t> missing;  // neighbours not heard from
  Close closed = Close::kComplete;
  bool deadline_hit = false;  // closed == kDeadline
  double seconds = 0;         // from wait() to completion
};

struct GateConfig {
  DeadlineConfig deadline;
  // Close once this many awaited neighbours have spoken and the grace has passed; 0: only
  // completion or the deadline close a round. Not in the first round this gate waits for: it
  // waits for every live neighbour, so peers that start at different times set off together
  // instead of leaving the slow starters to catch up.
  std::size_t quorum = 0;
  // The grace after the quorum: this fraction of the time the quorum took, at least grace_min_ms
  // (a tick, not a margin: at 1 ms it made a 3 ms round's grace a third, above the quarter
  // PROTOCOL.md bounds b stragglers' cost by).
  double grace_fraction = 0.25;
  double grace_min_ms = 0.1;
  // The pace floor: a round the quorum closes lasts at least this fraction of the median of
  // the node's last `pace_history` rounds that closed complete or by quorum (from
  // `pace_min_samples` of them on); 0: off. A node whose quorum came early (its neighbours'
  // messages were buffered, or the fast ones came first) gains nothing by closing at once: its
  // next round waits for the neighbours it left behind, and the vector it skipped is lost. The
  // floor is below the pace the rounds set, so it cannot slow the node below its neighbours.
  double pace_fraction = 0;
  std::size_t pace_history = 16;
  std::size_t pace_min_samples = 4;
  // b: a claimed round counts as evidence only when more than b neighbours claim at least it.
  std::size_t budget = 0;
  // On a transport that does not authenticate its peers, a neighbour's claims count as evidence
  // once its connection has been the pair's this long: anyone can open a connection that names
  // a neighbour, and it stays the pair's only until the genuine neighbour redials (its backoff,
  // tens of ms). 0: at once.
  double claim_settle_ms = 0;
  // Catching up never opens a round past this one (the node's last).
  std::uint64_t last_round = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t window = 8;  // future rounds buffered
};

class RoundGate {
 public:
  RoundGate(Clock& clock, const Transport& transport, std::span<const std::uint32_t> neighbours,
            GateConfig config, std::uint64_t first_round);

  // Feed every RoundMessage the transport delivers.
  Admission add(Received&& message);

  // Waits for the open round; `done` runs once, on completion, at quorum or at the deadline,
  // and the next round opens. One wait at a time.
  void wait(std::function<void(RoundResult&&)> done);

  // Drops the pending wait (its `done` never runs) and its deadline timer: the node is leaving.
  void cancel();

  // Re-checks completion: call when a peer goes down, so it no longer blocks the round.
  void poke();
  // `peer` has a new connection (a first one, a reconnect, or one that replaced the pair's):
  // what came over the old one — its round claims, its messages buffered for this round and
  // later ones — is dropped; its claims count again claim_settle_ms from now.
  void linkUp(std::uint32_t peer);

  // `wake` runs once, posted on the clock, after the next change of what the gate knows: a
  // message in, a neighbour's round noted, a poke (a link down). A peer holding its round's
  // start on what its neighbours have done waits on it instead of polling. cancel() drops it.
  void whenChanged(std::function<void()> wake) { wake_ = std::move(wake); }

  // `sender`'s message for `round` came after that round closed without it. How late it was
  // feeds the deadline once per (round, sender) of the last `window` rounds: an estimator fed
  // only the arrivals that beat it cannot learn that it closes too early, and a node whose
  // deadline fell below its neighbours' pace would run ahead of them alone for good.
  void noteLate(std::uint32_t sender, std::uint64_t round);

  // A neighbour's claim about its round (heartbeats; messages note their own). Claims are
  // untrusted: each neighbour's highest is kept, and only the (b+1)-th highest among the live
  // neighbours' moves this node (catchUp).
  void noteRound(std::uint32_t sender, std::uint64_t round);
  // Whether `peer`'s round is known (it has sent a heartbeat or a message).
  bool knowsRoundOf(std::uint32_t peer) const { return latest_.contains(peer); }
  // Whether `peer` claims to have reached `round`.
  bool hasReached(std::uint32_t peer, std::uint64_t round) const {
    const auto it = latest_.find(peer);
    return it != latest_.end() && it->second >= round;
  }
  // The highest round that more than b live neighbours claim to have reached (so at least one
  // honest neighbour has), capped at the last round; 0 when fewer than b+1 have claimed.
  std::uint64_t evidencedRound() const;
  // Moves to evidencedRound() when it is ahead (a restarted or lagging node). True when moved.
  // Called after every round and by a node about to start its first.
  bool catchUp();
  // The messages buffered for rounds a catch-up skipped, in round order, since the last call.
  std::vector<Received> takeSkipped() { return std::exchange(skipped_, {}); }

  std::uint64_t openRound() const { return inbox_.openRound(); }
  const RoundInbox& inbox() const { return inbox_; }
  double deadlineMs() const { return deadline_.deadlineMs(); }
  double ceilingMs() const { return deadline_.ceilingMs(); }
  std::vector<double> deadlineOffsets() const { return deadline_.offsets(); }
  // Offsets from a checkpoint, observed in order (each checked as any arrival is).
  void restoreDeadline(std::span<const double> offsets_ms) {
    for (const double ms : offsets_ms) deadline_.observe(ms);
  }
  std::uint64_t deadlineMisses() const { return deadline_misses_; }

 private:
  bool quorumMet(std::span<const std::uint32_t> live) const;
  double elapsedMs() const;
  double paceFloorMs() const;  // 0 when off or before enough rounds
  // The deadline learns when the honest quorum is in: one sample per round, the offset of its
  // (deg − b)-th arrival (at least the first), in time or late. The b latest of a round may all
  // be stragglers: fed, they were half of what the median saw where deg ≤ 2b, and one staller
  // set a ring's pace. A round whose quorum was in when it opened measures that the node was
  // behind, not the pace, and feeds nothing; in one it waits for, a message already there
  // arrived at offset 0.
  std::size_t pacedBy() const;
  void openPaceSample();
  void arm(double at_ms);
  void finish(Close why);

  void changed();  // posts and clears wake_

  Clock& clock_;
  std::function<void()> wake_;
  const Transport& transport_;
  std::vector<std::uint32_t> neighbours_;
  GateConfig config_;
  RoundInbox inbox_;
  DeadlineEstimator deadline_;
  std::unique_ptr<Timer> timer_;
  std::function<void(RoundResult&&)> done_;
  Clock::TimePoint opened_;
  double deadline_ms_ = 0;        // this round's deadline, fixed when it opened
  double grace_end_ms_ = -1;      // when the quorum's grace ends; < 0: no quorum yet
  std::uint64_t generation_ = 0;  // stale timer callbacks compare against it
  std::uint64_t waits_ = 0;       // rounds waited for so far
  std::uint64_t deadline_misses_ = 0;
  bool pace_pending_ = false;    // the open round's pace sample is still to come
  std::deque<double> paces_ms_;  // durations of the last rounds closed complete or by quorum
  std::map<std::uint32_t, std::uint64_t> latest_;       // by neighbour
  std::map<std::uint32_t, Clock::TimePoint> up_since_;  // by neighbour: its connection's start
  struct Closed {
    std::uint64_t round;
    Clock::TimePoint opened;
    std::vector<std::uint32_t> missing;  // not yet heard late
    bool pace_pending;                   // its (deg − b)-th arrival has not been seen yet
  };
  std::deque<Closed> closed_;  // the last `window` rounds this gate closed
  std::vector<Received> skipped_;
};

}  // namespace phalanx::net
