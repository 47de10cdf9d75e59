// The round inbox (DESIGN.md "Rounds over a real network"): messages per (round, sender) for
// the open round and a bounded window of future rounds; stale ones, duplicates, unknown
// senders and equivocation (a second, different message from one sender for one round) are
// counted and ignored. Pure bookkeeping: the transport feeds it, the node's round loop asks
// it whether the round is complete and takes the messages. Owned by the node's network
// thread; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "net/received.h"

namespace phalanx::net {

enum class Admission : std::uint8_t {
  kAccepted,
  kDuplicate,      // the same bytes again (a resend): harmless, ignored
  kEquivocation,   // different content for a (round, sender) already heard: the first stands
  kStale,          // for a round already closed
  kTooFarAhead,    // beyond the buffering window
  kUnknownSender,  // not a neighbour
};
// The refusals' metric labels: net/refusal.h.

struct InboxCounters {
  std::uint64_t accepted = 0, duplicate = 0, equivocation = 0, stale = 0, too_far_ahead = 0,
                unknown_sender = 0;
};

class RoundInbox {
 public:
  // Messages are expected from `neighbours`; rounds open from `first_round`; up to `window`
  // rounds after the open one are buffered.
  RoundInbox(std::span<const std::uint32_t> neighbours, std::uint64_t first_round,
             std::uint64_t window);

  // The transport has checked that message.sender() is the authenticated peer.
  Admission add(Received message);

  std::uint64_t openRound() const { return open_; }

  // True when every neighbour in `live` has a message for the open round.
  bool complete(std::span<const std::uint32_t> live) const;

  // Senders heard for the open round so far, and how many (checked at every arrival).
  std::vector<std::uint32_t> heard() const;
  std::size_t heardCount() const;

  // Closes the open round (at completion or at the deadline) and returns its messages by
  // sender; the next round opens. Later messages for it are stale.
  std::map<std::uint32_t, Received> close();

  // Moves the open round forward to `round` (a node catching up with its neighbours); the
  // messages buffered for the rounds it skips are returned in round order (they will enter no
  // mix, but a replica needs every delta; the caller counts what it does with them).
  std::vector<Received> advanceTo(std::uint64_t round);
  // Drops what `sender` sent for the open round and later ones (its connection was replaced:
  // those messages may have come from someone else).
  void forget(std::uint32_t sender);

  const InboxCounters& counters() const { return counters_; }
  // Per sender: how many times it equivocated (for the node's metrics).
  const std::map<std::uint32_t, std::uint64_t>& equivocations() const { return equivocations_; }

 private:
  std::set<std::uint32_t> neighbours_;
  std::uint64_t open_;
  std::uint64_t window_;
  std::map<std::uint64_t, std::map<std::uint32_t, Received>> rounds_;
  InboxCounters counters_;
  std::map<std::uint32_t, std::uint64_t> equivocations_;
};

}  // namespace phalanx::net
