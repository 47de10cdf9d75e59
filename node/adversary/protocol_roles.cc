#include "node/adversary/protocol_roles.h"

namespace phalanx::node {

std::chrono::microseconds Staller::startDelay() const {
  return std::chrono::milliseconds(std::int64_t(0.9 * double(host_.config().rounds.deadline_ms)));
}

std::uint64_t RoundLiar::liedRound(std::uint64_t t) {
  switch (t % 4) {
    case 0:
      return std::uint64_t(1) << 62;
    case 1:
      return 0;
    case 2:
      return t + 9;
    default:
      return t + 1000;
  }
}

std::optional<net::v1::RoundMessage> RoundLiar::lieAbout(const net::v1::RoundMessage& m) const {
  net::v1::RoundMessage lie = m;
  lie.set_round(liedRound(m.round()));
  return lie;
}

void ResyncFlooder::afterHonestMix(std::uint64_t t) {
  for (const std::uint32_t j : host_.neighbours()) host_.askForKeyframe(j, t);
}

}  // namespace phalanx::node
