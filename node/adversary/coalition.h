// Omniscient collusion (ALGORITHMS.md §4 "Knowledge"): what colluding Byzantine peers pool
// over their side channel (net/FORMAT.md `Coalition`). Each one shares the honest round vectors
// it heard with the fellows that are no neighbours of their senders; the union is what all of
// them craft from, and the coalition's leader (its lowest live id) runs the attack's
// computation once — one vector for everyone, or one per target — and hands the vectors to the
// others.
// Bookkeeping only, bounded to a window of rounds; owned by one node's thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "net/proto/phalanx.pb.h"

namespace phalanx::node {

class CoalitionBook {
 public:
  // `fellows`: the other colluders; `dim`: every vector's length.
  CoalitionBook(std::vector<std::uint32_t> fellows, std::size_t dim);

  const std::vector<std::uint32_t>& fellows() const { return fellows_; }

  // A message from `from`. False (nothing kept) when `from` is not a fellow, the round is
  // outside the window, or the payload does not decode to `dim` finite floats.
  bool take(std::uint32_t from, const net::v1::Coalition& message);

  // Every live fellow's share for `round` has come in whole.
  bool sharesComplete(std::uint64_t round, std::span<const std::uint32_t> live) const;
  // How many fellows' shares for `round` have come in whole, live or not.
  std::size_t sharesIn(std::uint64_t round) const;
  // The honest vectors the fellows shared for `round`, by honest peer id.
  const std::map<std::uint32_t, std::vector<float>>& pooled(std::uint64_t round) const;
  // The leader's crafted vector for `round` (for everyone, or for `target`), if it came.
  const std::vector<float>* crafted(std::uint64_t round,
                                    std::optional<std::uint32_t> target = std::nullopt) const;

  // Whether any crafted vector came for `round` (a leader acted).
  bool anyCrafted(std::uint64_t round) const;
  // The lowest of `self` and the live fellows.
  std::uint32_t leader(std::uint32_t self, std::span<const std::uint32_t> live) const;

  // Forgets rounds before `current` - 2 and ignores messages for them from then on.
  void advance(std::uint64_t current);

  // The messages that share `ids[k]`'s vector `rows[k]` for `round` (a count-0 marker when
  // there is none), and the one that hands over a crafted vector.
  static std::vector<net::v1::Envelope> shares(std::uint64_t round,
                                               std::span<const std::uint32_t> ids,
                                               std::span<const std::span<const float>> rows);
  static net::v1::Envelope craftedMessage(std::uint64_t round, std::span<const float> vector,
                                          std::optional<std::uint32_t> target = std::nullopt);

 private:
  struct Share {
    std::optional<std::uint32_t> count;  // how many the fellow said it sends
    std::set<std::uint32_t> about;       // which it sent so far
  };
  struct Round {
    std::map<std::uint32_t, Share> by_fellow;
    std::map<std::uint32_t, std::vector<float>> pooled;  // by honest id
    std::optional<std::vector<float>> crafted;
    std::map<std::uint32_t, std::vector<float>> crafted_for;  // by target
  };
  // `fellow`'s share for the round has come in whole.
  static bool whole(const Round& r, std::uint32_t fellow);

  std::vector<std::uint32_t> fellows_;
  std::size_t dim_;
  std::uint64_t floor_ = 0;
  std::map<std::uint64_t, Round> rounds_;
};

}  // namespace phalanx::node
