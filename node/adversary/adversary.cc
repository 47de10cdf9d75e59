#include "node/adversary/adversary.h"

#include <fmt/format.h>

#include "node/adversary/keyframe_spammer.h"
#include "node/adversary/protocol_roles.h"
#include "node/adversary/vector_attacker.h"
#include "node/adversary/wire_attacker.h"

namespace phalanx::node {

PeerRole roleOf(const AttackSpec& attack) {
  // Protocol attacks run the honest round with honest vectors and misbehave around it.
  if (attack.kind == Misbehaviour::kVector) return PeerRole::kVectorAttack;
  if (attack.kind == Misbehaviour::kSilent) return PeerRole::kSilent;
  if (attack.wire()) return PeerRole::kWireAttack;
  return PeerRole::kHonest;
}

// The registry of the kinds that are no vector attack: one line each (a silent peer and a
// label flipper need no hook: the first sends nothing, the second trains on flipped labels).
std::unique_ptr<Tactic> Adversary::tacticFor(const AttackSpec& spec) const {
  switch (spec.kind) {
    case Misbehaviour::kGarbage:
    case Misbehaviour::kWrongDim:
    case Misbehaviour::kReplay:
      return std::make_unique<WireAttacker>(host_, spec.kind);
    case Misbehaviour::kStall:
      return std::make_unique<Staller>(host_);
    case Misbehaviour::kRoundLie:
      return std::make_unique<RoundLiar>();
    case Misbehaviour::kResyncFlood:
      return std::make_unique<ResyncFlooder>(host_);
    case Misbehaviour::kKeyframeSpam:
      return std::make_unique<KeyframeSpammer>();
    case Misbehaviour::kHonest:
    case Misbehaviour::kLabelflip:
    case Misbehaviour::kSilent:
    case Misbehaviour::kVector:
      break;
  }
  return std::make_unique<Tactic>();
}

Adversary::Adversary(AdversaryHost& host, AttackSpec spec, std::set<std::uint32_t> byzantine)
    : host_(host), spec_(spec), byzantine_(std::move(byzantine)), tactic_(tacticFor(spec)) {
  if (spec_.kind != Misbehaviour::kVector) return;
  vector_ = std::make_unique<VectorAttacker>(host_, spec_, byzantine_, /*collude=*/true);
  auto attack = vector_->makeAttack(spec_);
  if (!attack) throw ConfigError("byzantine: " + attack.error());
  vector_->setAttack(std::move(*attack));
  if (host_.isHub()) {
    throw ConfigError(
        "byzantine: a vector attack at the hub is outside exchange: hub's threat model (the "
        "leaves trust their hub; docs/PROTOCOL.md \"Hub exchange\")");
  }
  if (host_.hubMode() && vector_->perTarget()) {
    throw ConfigError(fmt::format(
        "byzantine: {} crafts per target from the vectors around it; a leaf of exchange: hub "
        "hears no other leaf",
        spec_.name()));
  }
}

Adversary::~Adversary() = default;

std::expected<void, std::string> Adversary::switchTo(const AttackSpec& spec) {
  std::unique_ptr<robust::Attack> attack;
  if (spec.kind == Misbehaviour::kVector) {
    // A peer that turns into a vector attacker now joins no coalition (its fellows did not
    // count it in theirs).
    if (!vector_)
      vector_ = std::make_unique<VectorAttacker>(host_, spec_, byzantine_, /*collude=*/false);
    auto made = vector_->makeAttack(spec);
    if (!made) return std::unexpected(made.error());
    attack = std::move(*made);
  }
  if (vector_) vector_->setAttack(std::move(attack));
  spec_ = spec;
  tactic_ = tacticFor(spec);
  return {};
}

std::vector<std::uint32_t> Adversary::fellows() const {
  if (!vector_ || !vector_->coalition()) return {};
  return vector_->coalition()->fellows();
}

bool Adversary::takeCoalition(std::uint32_t peer, const net::v1::Coalition& message) {
  return vector_ && vector_->takeCoalition(peer, message);
}

void Adversary::linkDown() {
  if (vector_) vector_->linkDown();
}

bool Adversary::holdsRound(std::uint64_t t) const {
  // (A leaf of exchange: hub hears the hub's round only after it sent its own.) A rushing
  // attacker whose round ended before any honest vector came (they were slower than its half
  // deadline) must not run on: a round ahead, it hears only stale messages, sends nothing,
  // costs each honest neighbour a full deadline and drifts further ahead. It waits for them.
  return spec_.kind == Misbehaviour::kVector && !host_.hubMode() &&
         vector_->aheadOfHonestNeighbours(t);
}

std::uint64_t Adversary::announcedRound(std::uint64_t t) const {
  return tactic_->announcedRound(t);
}

std::chrono::microseconds Adversary::startDelay() const { return tactic_->startDelay(); }

std::optional<net::v1::RoundMessage> Adversary::lieAbout(
    const net::v1::RoundMessage& header) const {
  return tactic_->lieAbout(header);
}

bool Adversary::spamsKeyframes() const { return tactic_->spamsKeyframes(); }

bool Adversary::startRound(std::uint64_t t) {
  if (spec_.kind != Misbehaviour::kVector || !host_.hubMode()) return false;
  vector_->startLeafRound(t);
  return true;
}

void Adversary::afterHonestMix(std::uint64_t t) { tactic_->afterHonestMix(t); }

bool Adversary::endRound(std::uint64_t t, std::vector<std::uint32_t>& heard, RoundRecord& record) {
  if (spec_.kind == Misbehaviour::kVector) return vector_->endRound(t, heard, record);
  tactic_->endRound(t);
  return false;
}

void Adversary::stop() {
  if (vector_) vector_->stop();
}

}  // namespace phalanx::node
