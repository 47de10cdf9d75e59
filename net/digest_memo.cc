#include "net/digest_memo.h"

#include <algorithm>
#include <cstring>

namespace phalanx::net {

std::size_t DigestMemo::DigestHash::operator()(const Digest& d) const {
  std::size_t h;
  std::memcpy(&h, d.data(), sizeof h);  // BLAKE3's bytes are uniform already
  return h;
}

std::optional<DigestMemo::Held> DigestMemo::find(const Digest& digest) const {
  std::lock_guard lock(mutex_);
  const auto it = held_.find(digest);
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

void DigestMemo::keep(const Digest& digest, std::span<const float> values,
                      std::shared_ptr<const void> owner) {
  Held held{std::move(owner), values};
  if (!held.owner) {
    auto copy = std::make_shared<const std::vector<float>>(values.begin(), values.end());
    held.values = *copy;
    held.owner = std::move(copy);
  }
  std::lock_guard lock(mutex_);
  ++counters_.hashed;
  if (!held_.emplace(digest, std::move(held)).second) return;
  order_.push_back(digest);
  bytes_ += values.size_bytes();
  while (order_.size() > 1 && (order_.size() > capacity_ || bytes_ > max_bytes_)) {
    const auto it = held_.find(order_.front());
    bytes_ -= it->second.values.size_bytes();
    held_.erase(it);
    order_.pop_front();
  }
}

Digest DigestMemo::digest(std::span<const float> values, std::shared_ptr<const void> owner) {
  const Digest d = vectorDigest(values);
  keep(d, values, std::move(owner));
  return d;
}

bool DigestMemo::matches(std::span<const float> values, const Digest& claimed) {
  if (const auto held = find(claimed)) {
    // The very bytes that were hashed (a receiver reading the sender's keyframe), or equal ones.
    if (held->values.size() == values.size() &&
        (held->values.data() == values.data() ||
         std::memcmp(held->values.data(), values.data(), values.size_bytes()) == 0)) {
      std::lock_guard lock(mutex_);
      ++counters_.compared;
      return true;
    }
  }
  return digest(values) == claimed;
}

DigestMemo::Counters DigestMemo::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

Digest digestVia(DigestMemo* memo, std::span<const float> values,
                 std::shared_ptr<const void> owner) {
  return memo ? memo->digest(values, std::move(owner)) : vectorDigest(values);
}

bool digestMatches(DigestMemo* memo, std::span<const float> values, const Digest& claimed) {
  return memo ? memo->matches(values, claimed) : vectorDigest(values) == claimed;
}

}  // namespace phalanx::net
