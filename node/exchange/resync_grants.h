// Keyframes granted on request (docs/PROTOCOL.md "Keyframes"): a neighbour that asks gets one at
// once, then at least 16 rounds apart, the gap doubling while it keeps asking (up to 128), and a
// neighbour quiet for 128 rounds starts over — so a resync flood costs at most one keyframe per
// 128 rounds once it has run a while, and an honest neighbour that lost its replica is served.
#pragma once

#include <cstdint>
#include <map>

namespace phalanx::node {

class ResyncGrants {
 public:
  static constexpr std::uint64_t kInterval = 16;
  static constexpr std::uint64_t kMaxInterval = 128;

  // Whether `peer`'s request in `round` is granted (it is then owed a keyframe); a refused one
  // is throttled.
  bool grant(std::uint32_t peer, std::uint64_t round);

 private:
  struct Grant {
    std::uint64_t next = 0, interval = kInterval;  // the next round a request is granted; the gap
  };
  std::map<std::uint32_t, Grant> grants_;
};

}  // namespace phalanx::node
