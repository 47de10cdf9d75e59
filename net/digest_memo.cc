#include "net/digest_memo.h"

#include <algorithm>
#include <cstring>

namespace phalanx::net {

std::size_t DigestMemo::DigestHash::operator()(const Digest& d) const {
  std::size_t h;
  std::memcpy(&h, d.data(), sizeof h);  // SHA-256's bytes are uniform already
  return h;
}

DigestMemo::Held DigestMemo::find(const Digest& digest) const {
  std::lock_guard lock(mutex_);
  const auto it = held_.find(digest);
  return it == held_.end() ? nullptr : it->second;
}

void DigestMemo::keep(const Digest& digest, std::span<const float> values) {
  auto copy = std::make_shared<const std::vector<float>>(values.begin(), values.end());
  std::lock_guard lock(mutex_);
  ++counters_.hashed;
  if (!held_.emplace(digest, std::move(copy)).second) return;
  order_.push_back(digest);
  bytes_ += values.size_bytes();
  while (order_.size() > 1 && (order_.size() > capacity_ || bytes_ > max_bytes_)) {
    const auto it = held_.find(order_.front());
    bytes_ -= it->second->size() * sizeof(float);
    held_.erase(it);
    order_.pop_front();
  }
}

Digest DigestMemo::digest(std::span<const float> values) {
  const Digest d = vectorDigest(values);
  keep(d, values);
  return d;
}

bool DigestMemo::matches(std::span<const float> values, const Digest& claimed) {
  if (const Held held = find(claimed)) {
    if (held->size() == values.size() &&
        std::memcmp(held->data(), values.data(), values.size_bytes()) == 0) {
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

Digest digestVia(DigestMemo* memo, std::span<const float> values) {
  return memo ? memo->digest(values) : vectorDigest(values);
}

bool digestMatches(DigestMemo* memo, std::span<const float> values, const Digest& claimed) {
  return memo ? memo->matches(values, claimed) : vectorDigest(values) == claimed;
}

}  // namespace phalanx::net
