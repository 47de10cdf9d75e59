#include "node/equivocation.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace phalanx::node {

std::uint64_t vectorDigest(std::span<const float> values) {
  return XXH3_64bits(values.data(), values.size_bytes());
}

bool EquivocationDetector::inWindow(std::uint64_t round) const {
  return round + window_ >= current_ && round <= current_ + window_;
}

bool EquivocationDetector::own(std::uint64_t round, std::uint32_t sender, std::uint64_t digest) {
  if (!inWindow(round)) return false;
  Slot& slot = slots_[{round, sender}];
  if (slot.own) return false;
  slot.own = digest;
  return check(sender, slot);
}

bool EquivocationDetector::report(std::uint32_t reporter, std::uint64_t round, std::uint32_t sender,
                                  std::uint64_t digest) {
  if (!inWindow(round) || reporter == sender) return false;
  Slot& slot = slots_[{round, sender}];
  if (!slot.reports.emplace(reporter, digest).second) return false;
  return check(sender, slot);
}

bool EquivocationDetector::check(std::uint32_t sender, Slot& slot) {
  if (slot.caught || !slot.own) return false;
  std::size_t disagree = 0;
  for (const auto& [_, digest] : slot.reports) disagree += digest != *slot.own;
  if (disagree <= budget_) return false;
  slot.caught = true;
  ++equivocations_[sender];
  return convicted_.insert(sender).second;
}

void EquivocationDetector::advance(std::uint64_t current) {
  current_ = std::max(current_, current);
  const std::uint64_t oldest = current_ > window_ ? current_ - window_ : 0;
  slots_.erase(slots_.begin(), slots_.lower_bound({oldest, 0}));
}

}  // namespace phalanx::node
