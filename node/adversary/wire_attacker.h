// Wire-level misbehaviour (docs/PROTOCOL.md): what arrives is not a vector at all — random
// bytes (garbage), a keyframe of the wrong length (wrong_dim), or the first keyframe again every
// round under its old sequence number (replay). Receivers must count and drop each.
#pragma once

#include <cstdint>
#include <random>

#include "net/transport.h"
#include "node/adversary/adversary.h"
#include "node/adversary/host.h"

namespace phalanx::node {

class WireAttacker : public Tactic {
 public:
  WireAttacker(AdversaryHost& host, Misbehaviour kind) : host_(host), kind_(kind) {}
  void endRound(std::uint64_t t) override;

 private:
  AdversaryHost& host_;
  Misbehaviour kind_;
  std::mt19937_64 rng_{0x5eed};       // the garbage attack's bytes
  net::Transport::Payload replayed_;  // replay: the first keyframe this node sent
};

}  // namespace phalanx::node
