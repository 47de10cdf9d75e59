#include "net/inbox.h"

#include <algorithm>

namespace phalanx::net {

RoundInbox::RoundInbox(std::span<const std::uint32_t> neighbours, std::uint64_t first_round,
                       std::uint64_t window)
    : neighbours_(neighbours.begin(), neighbours.end()), open_(first_round), window_(window) {}

Admission RoundInbox::add(Received message) {
  const std::uint64_t round = message.round();
  const std::uint32_t sender = message.sender();
  if (!neighbours_.contains(sender)) {
    ++counters_.unknown_sender;
    return Admission::kUnknownSender;
  }
  if (round < open_) {
    ++counters_.stale;
    return Admission::kStale;
  }
  if (round - open_ > window_) {
    ++counters_.too_far_ahead;
    return Admission::kTooFarAhead;
  }
  auto& slot = rounds_[round];
  const auto it = slot.find(sender);
  if (it != slot.end()) {
    // Same content is a resend; anything else is two different stories for one round.
    const bool same = it->second.kind() == message.kind() &&
                      it->second.sequence() == message.sequence() &&
                      it->second.codec() == message.codec() &&
                      std::ranges::equal(it->second.payload(), message.payload());
    if (same) {
      ++counters_.duplicate;
      return Admission::kDuplicate;
    }
    ++counters_.equivocation;
    ++equivocations_[sender];
    return Admission::kEquivocation;
  }
  slot.emplace(sender, std::move(message));
  ++counters_.accepted;
  return Admission::kAccepted;
}

bool RoundInbox::complete(std::span<const std::uint32_t> live) const {
  const auto it = rounds_.find(open_);
  for (const std::uint32_t peer : live) {
    if (!neighbours_.contains(peer)) continue;
    if (it == rounds_.end() || !it->second.contains(peer)) return false;
  }
  return true;
}

std::vector<std::uint32_t> RoundInbox::heard() const {
  std::vector<std::uint32_t> out;
  if (const auto it = rounds_.find(open_); it != rounds_.end()) {
    for (const auto& [sender, _] : it->second) out.push_back(sender);
  }
  return out;
}

std::size_t RoundInbox::heardCount() const {
  const auto it = rounds_.find(open_);
  return it == rounds_.end() ? 0 : it->second.size();
}

std::map<std::uint32_t, Received> RoundInbox::close() {
  std::map<std::uint32_t, Received> out;
  if (auto it = rounds_.find(open_); it != rounds_.end()) {
    out = std::move(it->second);
    rounds_.erase(it);
  }
  ++open_;
  return out;
}

std::vector<Received> RoundInbox::advanceTo(std::uint64_t round) {
  std::vector<Received> skipped;
  if (round <= open_) return skipped;
  for (auto it = rounds_.begin(); it != rounds_.end() && it->first < round;) {
    for (auto& [_, m] : it->second) skipped.push_back(std::move(m));
    it = rounds_.erase(it);
  }
  open_ = round;
  return skipped;
}

void RoundInbox::forget(std::uint32_t sender) {
  for (auto& [_, messages] : rounds_) messages.erase(sender);
}

}  // namespace phalanx::net
