// Everything only a Byzantine peer does (docs/PROTOCOL.md's threat model, ALGORITHMS.md §4),
// behind the hooks a round calls: the vector attacks with their knowledge, per-target and
// equivocating variants and the coalition (node/adversary/vector_attacker.h), wire
// misbehaviour (wire_attacker.h) and the protocol roles (protocol_roles.h). An honest peer holds
// no Adversary; a Byzantine one holds one for the rest of its life, whatever it is switched to
// (`inject attack none` makes it act honestly, its coalition kept).
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "net/proto/phalanx.pb.h"
#include "node/adversary/host.h"
#include "node/attack_spec.h"
#include "node/round_record.h"

namespace phalanx::node {

// What a peer does with a round's vectors: honest (protocol roles and label flipping included:
// they send honest vectors), a vector attack, nothing, or wire-level garbage.
enum class PeerRole { kHonest, kVectorAttack, kSilent, kWireAttack };
PeerRole roleOf(const AttackSpec& attack);

// One kind of misbehaviour's hooks; each does nothing unless its kind overrides it.
class Tactic {
 public:
  virtual ~Tactic() = default;
  // The round number this peer announces in its heartbeats while it runs round t.
  virtual std::uint64_t announcedRound(std::uint64_t t) const { return t; }
  // How much later than an honest peer it starts its round.
  virtual std::chrono::microseconds startDelay() const { return {}; }
  // A copy of an outgoing round message to send first (under a lie), if any.
  virtual std::optional<net::v1::RoundMessage> lieAbout(const net::v1::RoundMessage&) const {
    return std::nullopt;
  }
  // Every message a keyframe.
  virtual bool spamsKeyframes() const { return false; }
  // After the honest round's mix.
  virtual void afterHonestMix(std::uint64_t) {}
  // A round's end for a peer that sends no honest vector (what it sends instead).
  virtual void endRound(std::uint64_t) {}
};

class VectorAttacker;

class Adversary {
 public:
  // `byzantine`: the ids this peer knows to be Byzantine (the config's, and itself when it
  // started as one). Throws ConfigError where the attack cannot run here (a vector attack at a
  // hub, a per-target attack at a leaf, an attack the config cannot build).
  Adversary(AdversaryHost& host, AttackSpec spec, std::set<std::uint32_t> byzantine);
  ~Adversary();
  Adversary(const Adversary&) = delete;
  Adversary& operator=(const Adversary&) = delete;

  const AttackSpec& spec() const { return spec_; }
  PeerRole role() const { return roleOf(spec_); }
  // Switches what it runs (`inject attack NAME`); an error leaves it as it was.
  std::expected<void, std::string> switchTo(const AttackSpec& spec);

  // The colluders it talks to over connections of their own (none unless it colludes), and a
  // message from one of them (false: from no fellow, or not usable: counted as garbage).
  std::vector<std::uint32_t> fellows() const;
  bool takeCoalition(std::uint32_t peer, const net::v1::Coalition& message);
  // A link went down: a round held open for the fellows is checked again.
  void linkDown();

  // The round's hooks, in the order a round calls them.
  // A rushing attacker whose round is ahead of every honest neighbour's holds its start.
  bool holdsRound(std::uint64_t t) const;
  std::uint64_t announcedRound(std::uint64_t t) const;
  std::chrono::microseconds startDelay() const;
  std::optional<net::v1::RoundMessage> lieAbout(const net::v1::RoundMessage& header) const;
  bool spamsKeyframes() const;
  // At the round's start: true when the adversary took the round over (a leaf's attack goes
  // up before the round's messages are awaited).
  bool startRound(std::uint64_t t);
  void afterHonestMix(std::uint64_t t);
  // At the round's end of a peer that sends no honest vector: true when the adversary holds
  // the round open (it finishes it through the host later); `heard` and `record` are then its.
  bool endRound(std::uint64_t t, std::vector<std::uint32_t>& heard, RoundRecord& record);
  // No more rounds: its timers stop.
  void stop();

 private:
  std::unique_ptr<Tactic> tacticFor(const AttackSpec& spec) const;

  AdversaryHost& host_;
  AttackSpec spec_;
  std::set<std::uint32_t> byzantine_;
  // The vector attacks' state (the attack, the coalition and a round held open for it): kept
  // across switches, so that a round a colluder holds open ends whatever it was switched to.
  std::unique_ptr<VectorAttacker> vector_;
  std::unique_ptr<Tactic> tactic_;  // every other kind
};

}  // namespace phalanx::node
