// The protocol roles (docs/PROTOCOL.md): peers that send honest vectors and misbehave around
// the round — a staller starts every round just before its neighbours' deadline ceiling, a
// round liar announces and sends under false round numbers, a resync flooder asks every
// neighbour for a keyframe every round (the keyframe spammer: node/adversary/keyframe_spammer.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "node/adversary/adversary.h"
#include "node/adversary/host.h"

namespace phalanx::node {

class Staller : public Tactic {
 public:
  explicit Staller(const AdversaryHost& host) : host_(host) {}
  std::chrono::microseconds startDelay() const override;

 private:
  const AdversaryHost& host_;
};

class RoundLiar : public Tactic {
 public:
  // Its claims, by round: far future, the past, just beyond the receivers' window, ahead.
  static std::uint64_t liedRound(std::uint64_t t);
  std::uint64_t announcedRound(std::uint64_t t) const override { return liedRound(t); }
  // The same message again under a lie about its round, sent before the true one.
  std::optional<net::v1::RoundMessage> lieAbout(const net::v1::RoundMessage& m) const override;
};

class ResyncFlooder : public Tactic {
 public:
  explicit ResyncFlooder(AdversaryHost& host) : host_(host) {}
  void afterHonestMix(std::uint64_t t) override;

 private:
  AdversaryHost& host_;
};

}  // namespace phalanx::node
