#include "node/equivocation.h"

#include <algorithm>

namespace phalanx::node {

bool EquivocationDetector::inWindow(std::uint64_t round) const {
  return round + window_ >= current_ && round <= current_ + window_;
}

EquivocationDetector::Outcome EquivocationDetector::own(const Statement& s) {
  if (!inWindow(s.round)) return {};
  return add(s.sender, s.round, slotOf(s.round, s.sender),
             Entry{s.digest, s.signature, true, std::nullopt});
}

EquivocationDetector::Outcome EquivocationDetector::report(std::uint32_t reporter,
                                                           std::uint32_t sender,
                                                           std::uint64_t round,
                                                           const Digest& digest,
                                                           std::string_view signature) {
  if (!inWindow(round) || reporter == sender || signature.empty()) return {};
  Slot& held = slotOf(round, sender);
  if (std::any_of(held.entries.begin(), held.entries.end(),
                  [&](const Entry& e) { return e.digest == digest && e.signature == signature; })) {
    return {};  // what this node holds already: nothing to keep, check or relay
  }
  if (!held.reported.emplace(reporter, digest).second) return {};
  return add(sender, round, held, Entry{digest, std::string(signature), false, std::nullopt});
}

EquivocationDetector::Outcome EquivocationDetector::add(std::uint32_t sender, std::uint64_t round,
                                                        Slot& slot, Entry entry) {
  const auto same = std::find_if(slot.entries.begin(), slot.entries.end(), [&](const Entry& e) {
    return e.digest == entry.digest && e.signature == entry.signature;
  });
  if (same != slot.entries.end()) {
    if (!entry.firsthand || same->firsthand) return {};
    same->firsthand = true;  // heard from a neighbour first, now from the sender itself
    return settle(sender, round, slot);
  }
  if (slot.caught || slot.entries.size() >= kMaxEntries) return {};
  const Digest digest = entry.digest;
  const std::string signature = entry.signature;
  slot.entries.push_back(std::move(entry));
  Outcome out = settle(sender, round, slot);
  // Fresh unless its check failed (the entry is then gone).
  out.fresh = std::any_of(slot.entries.begin(), slot.entries.end(), [&](const Entry& e) {
    return e.digest == digest && e.signature == signature && e.good != false;
  });
  return out;
}

EquivocationDetector::Outcome EquivocationDetector::settle(std::uint32_t sender,
                                                           std::uint64_t round, Slot& slot) {
  // Agreeing statements need no check; disagreeing ones are all checked.
  const bool disagree = std::any_of(slot.entries.begin(), slot.entries.end(), [&](const Entry& e) {
    return e.digest != slot.entries.front().digest;
  });
  if (!disagree || slot.caught) return {};
  bool forged_to_me = false;
  for (Entry& e : slot.entries) {
    if (!e.good) e.good = check(sender, round, e.digest, e.signature);
    forged_to_me |= e.firsthand && e.good == false;
  }
  std::erase_if(slot.entries, [](const Entry& e) { return !e.firsthand && e.good == false; });
  Outcome out;
  const Entry* first = nullptr;
  for (const Entry& e : slot.entries) {
    if (e.good != true) continue;
    if (!first) {
      first = &e;
    } else if (e.digest != first->digest) {
      out.proof = Proof{{sender, round, first->digest, first->signature},
                        {sender, round, e.digest, e.signature}};
      break;
    }
  }
  if (out.proof || forged_to_me) {
    slot.caught = true;
    out.convicted = !convicted_.contains(sender);
    convict(sender, round);
  }
  return out;
}

std::optional<bool> EquivocationDetector::check(std::uint32_t sender, std::uint64_t round,
                                                const Digest& digest,
                                                const std::string& signature) {
  if (!keys_) return std::nullopt;
  const auto it = keys_->find(sender);
  if (it == keys_->end()) return std::nullopt;  // no key: nothing about it is proven here
  ++checked_;
  const bool good = it->second->verify(domain_, sender, round, digest, signature);
  refused_ += !good;
  return good;
}

void EquivocationDetector::convict(std::uint32_t sender, std::uint64_t round) {
  ++equivocations_[sender];
  if (convicted_.insert(sender).second) convicted_at_[sender] = round;
}

bool EquivocationDetector::proof(std::uint32_t reporter, const Proof& p) {
  const std::uint32_t sender = p.a.sender;
  if (convicted_.contains(sender) || p.b.sender != sender || p.a.round != p.b.round ||
      p.a.digest == p.b.digest || !proofs_seen_.emplace(reporter, sender).second) {
    return false;
  }
  if (check(sender, p.a.round, p.a.digest, p.a.signature) != true ||
      check(sender, p.b.round, p.b.digest, p.b.signature) != true) {
    return false;
  }
  convict(sender, p.a.round);
  return true;
}

void EquivocationDetector::advance(std::uint64_t current) {
  current_ = std::max(current_, current);
  const std::uint64_t oldest = current_ > window_ ? current_ - window_ : 0;
  slots_.erase(slots_.begin(), slots_.lower_bound(oldest));
}

}  // namespace phalanx::node
