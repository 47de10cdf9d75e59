#include "node/exchange/resync_grants.h"

#include <algorithm>

namespace phalanx::node {

bool ResyncGrants::grant(std::uint32_t peer, std::uint64_t t) {
  Grant& g = grants_[peer];
  if (t < g.next) return false;
  if (t >= g.next + kMaxInterval) g.interval = kInterval;  // quiet for long: start over
  g.next = t + g.interval;
  g.interval = std::min(g.interval * 2, kMaxInterval);
  return true;
}

}  // namespace phalanx::node
