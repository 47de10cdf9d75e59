// Statement digests one process has computed, by content (DESIGN.md "Simulation"): in
// `phalanx simulate` a sender and each receiver of its vector would hash the same 318 KB, so
// the first one's digest is kept with the bytes (a reference to an immutable buffer where the
// hasher has one, a copy otherwise) and the others compare bytes instead (memcmp runs several
// times faster than BLAKE3 here). An answer is never taken on trust: it is given only for bytes
// equal to those hashed, so every outcome is the one vectorDigest gives.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "net/signing.h"

namespace phalanx::net {

class DigestMemo {
 public:
  // Holds at most `capacity` vectors and `max_bytes` of them, the oldest forgotten first (a
  // forgotten one is hashed again by its next asker): memory a large simulation needs for its
  // peers is not spent on saving hashes.
  explicit DigestMemo(std::size_t capacity, std::size_t max_bytes = std::size_t{1} << 30)
      : capacity_(capacity), max_bytes_(max_bytes) {}

  // vectorDigest(values), kept for later askers. `owner`, when given, keeps `values` alive and
  // unchanged: it is held instead of a copy.
  Digest digest(std::span<const float> values, std::shared_ptr<const void> owner = nullptr);
  // Whether vectorDigest(values) == claimed: by comparing bytes when `claimed` is held.
  bool matches(std::span<const float> values, const Digest& claimed);

  struct Counters {
    std::size_t hashed = 0, compared = 0;  // digests computed; answered by comparison
  };
  Counters counters() const;

 private:
  struct DigestHash {
    std::size_t operator()(const Digest& d) const;
  };
  struct Held {
    std::shared_ptr<const void> owner;  // keeps `values` alive
    std::span<const float> values;
  };
  std::optional<Held> find(const Digest& digest) const;
  void keep(const Digest& digest, std::span<const float> values, std::shared_ptr<const void> owner);

  std::size_t capacity_, max_bytes_;
  std::size_t bytes_ = 0;
  mutable std::mutex mutex_;
  std::unordered_map<Digest, Held, DigestHash> held_;
  std::deque<Digest> order_;  // oldest first
  Counters counters_;
};

// With a memo when there is one (the simulation), plain vectorDigest otherwise.
Digest digestVia(DigestMemo* memo, std::span<const float> values,
                 std::shared_ptr<const void> owner = nullptr);
bool digestMatches(DigestMemo* memo, std::span<const float> values, const Digest& claimed);

}  // namespace phalanx::net
