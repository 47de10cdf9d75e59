#include "node/adversary/wire_attacker.h"

#include "node/exchange/replicas.h"

namespace phalanx::node {

void WireAttacker::endRound(std::uint64_t t) {
  if (kind_ == Misbehaviour::kReplay) {
    if (!replayed_)
      replayed_ =
          std::make_shared<const std::vector<std::uint8_t>>(encodeDense(host_.publicReplica()));
    // Always the first sequence: the receivers have seen it.
    for (const std::uint32_t j : host_.neighbours())
      host_.sendWhole(j, t, replayed_, /*sequence=*/1);
    return;
  }
  std::vector<std::uint8_t> bytes;
  if (kind_ == Misbehaviour::kWrongDim) {
    bytes = encodeDense(std::vector<float>(host_.dimension() + 7, 1.0f));
  } else {  // garbage
    std::uniform_int_distribution<int> byte(0, 255);
    bytes.resize(64 + t % 4032);
    for (auto& b : bytes) b = std::uint8_t(byte(rng_));
  }
  const auto payload = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  // As keyframes: a receiver decodes those whatever state its replica of this node is in.
  for (const std::uint32_t j : host_.neighbours()) host_.sendWhole(j, t, payload);
}

}  // namespace phalanx::node
