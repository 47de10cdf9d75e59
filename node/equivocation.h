// Equivocation evidence (docs/PROTOCOL.md "Equivocation"): a node compares its own digest of
// what sender j sent it for a round with the digests its neighbours report of what j sent
// them. A Byzantine reporter may lie, so j is convicted only when more than b reporters (the
// node's budget) disagree with this node's own digest for one round: then at least one honest
// neighbour holds a vector from j that differs from the one j sent here, which an honest j never
// does (its public replica is one vector per round, the same at every receiver, bit for bit).
// Pure bookkeeping, bounded: rounds outside a window around the node's own are ignored.
// Owned by the node's network thread; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

namespace phalanx::node {

// XXH3-64 of the vector's float32 bytes: what RoundDigest carries.
std::uint64_t vectorDigest(std::span<const float> values);

class EquivocationDetector {
 public:
  // `budget`: b; `window`: rounds kept either side of the current one.
  explicit EquivocationDetector(std::size_t budget, std::uint64_t window = 16)
      : budget_(budget), window_(window) {}

  // This node's digest of `sender`'s vector for `round`. Returns true when it convicts sender.
  bool own(std::uint64_t round, std::uint32_t sender, std::uint64_t digest);
  // `reporter`'s digest of `sender`'s vector for `round` (the first report per reporter, round
  // and sender stands). The caller has checked that reporter and sender are neighbours.
  bool report(std::uint32_t reporter, std::uint64_t round, std::uint32_t sender,
              std::uint64_t digest);

  // Forgets rounds before current - window; later reports for them are ignored.
  void advance(std::uint64_t current);

  bool convicted(std::uint32_t peer) const { return convicted_.contains(peer); }
  const std::set<std::uint32_t>& convictedPeers() const { return convicted_; }
  // Rounds in which a sender was caught (more than b disagreeing reporters), per sender.
  const std::map<std::uint32_t, std::uint64_t>& equivocations() const { return equivocations_; }

 private:
  struct Slot {
    std::optional<std::uint64_t> own;
    std::map<std::uint32_t, std::uint64_t> reports;  // by reporter
    bool caught = false;
  };
  bool inWindow(std::uint64_t round) const;
  bool check(std::uint32_t sender, Slot& slot);

  std::size_t budget_;
  std::uint64_t window_;
  std::uint64_t current_ = 0;
  std::map<std::pair<std::uint64_t, std::uint32_t>, Slot> slots_;  // by (round, sender)
  std::set<std::uint32_t> convicted_;
  std::map<std::uint32_t, std::uint64_t> equivocations_;
};

}  // namespace phalanx::node
