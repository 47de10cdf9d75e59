// A vector attacker (ALGORITHMS.md §4): waits for the honest vectors of the round (rushing),
// crafts its attack from what it knows — what it heard and, colluding, what its fellows pooled
// (node/adversary/coalition.h) — and sends it: one vector for every honest neighbour, one per
// neighbour (equivocate:NAME), or one per target (dissensus, spectral), the coalition's leader
// crafting for all. A leaf of exchange: hub crafts from its own and its fellows' honest vectors
// and sends before the hub's broadcast comes down.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "net/clock.h"
#include "node/adversary/coalition.h"
#include "node/adversary/host.h"
#include "node/attack_spec.h"
#include "node/round_record.h"
#include "robust/attacks.h"

namespace phalanx::node {

class VectorAttacker {
 public:
  // `spec`: the adversary's current attack (read at every round: a switch away from a vector
  // attack ends the sending, not a round held open). `collude`: whether it may join the
  // config's coalition (only a peer that starts as a vector attacker does).
  VectorAttacker(AdversaryHost& host, const AttackSpec& spec,
                 const std::set<std::uint32_t>& byzantine, bool collude);
  ~VectorAttacker();

  // The attack for `spec` (a vector attack; nullptr for anything else). ConfigError-worthy
  // problems come back as the error.
  std::expected<std::unique_ptr<robust::Attack>, std::string> makeAttack(
      const AttackSpec& spec) const;
  void setAttack(std::unique_ptr<robust::Attack> attack) { attack_ = std::move(attack); }
  bool perTarget() const { return attack_ && attack_->perTarget(); }

  const CoalitionBook* coalition() const { return coalition_.get(); }
  bool takeCoalition(std::uint32_t peer, const net::v1::Coalition& message);
  // A link went down: a round held open for the fellows may now have every live fellow's share.
  void linkDown();

  // Whether no live honest neighbour's vector for round t has come yet and none has moved past
  // t (so a rushing attacker opening t now could hear nothing before its deadline).
  bool aheadOfHonestNeighbours(std::uint64_t t) const;
  // A leaf's round start: its own gradient to its fellows, their shares awaited, the attack sent
  // up to the hub before the round's broadcast comes down.
  void startLeafRound(std::uint64_t t);
  // A round's end: true when it holds the round open for the coalition.
  bool endRound(std::uint64_t t, std::vector<std::uint32_t>& heard, RoundRecord& record);
  void stop();

 private:
  // The honest vectors known for the round: those heard (less the fellow attackers') and,
  // colluding, those the fellows shared.
  struct Knowledge {
    std::vector<std::uint32_t> ids;
    std::vector<std::span<const float>> rows;
    std::span<const float> of(std::uint32_t peer) const;  // empty when unknown
  };
  Knowledge knowledge(std::uint64_t round, const std::vector<std::uint32_t>& heard) const;
  // Of `heard`, the honest peers whose vector this node holds, with those vectors.
  Knowledge heardHonest(const std::vector<std::uint32_t>& heard) const;
  void sendAttack(std::uint64_t round, const std::vector<std::uint32_t>& heard,
                  RoundRecord& record);
  // The mean of `vectors` into `out`, when the attack cannot be crafted from them (`why`).
  void meanOf(std::span<const std::span<const float>> vectors, std::uint64_t t,
              const std::string& why, std::span<float> out);
  // Per target (dissensus, spectral): each target's view from everything known.
  void sendPerTarget(std::uint64_t round, const std::vector<std::uint32_t>& heard,
                     const Knowledge& known, RoundRecord& record);
  // A colluder's round end: waits until every live fellow's share and, for a shared attack, the
  // leader's vector are in or the wait runs out; then attacks and goes on. Woken by what may
  // complete it (a coalition message, a link down) and by the wait's end, not by a poll.
  void awaitCoalition(std::uint64_t round, std::vector<std::uint32_t> heard, RoundRecord record);
  // The round held open, checked again.
  void recheckCoalition();
  bool sharedAttack() const;  // the leader computes it for the coalition (not equivocate:NAME)
  // This node computes the coalition's attacks (not colluding: always).
  bool leadsCoalition() const;
  // Shares the honest vectors heard in `round` with the fellows: each gets those of the honest
  // peers it is no neighbour of (it hears its own neighbours itself), or a count-0 marker.
  void shareHeard(std::uint64_t round, const std::vector<std::uint32_t>& heard);
  // To every fellow colluder, or to those next to honest peer `next_to`.
  void toFellows(const net::v1::Envelope& e, std::optional<std::uint32_t> next_to = std::nullopt);

  AdversaryHost& host_;
  const AttackSpec& spec_;
  const std::set<std::uint32_t>& byzantine_;
  std::unique_ptr<robust::Attack> attack_;
  std::vector<double> fiedler_;  // spectral: the honest graph's Fiedler vector, by position
  std::unique_ptr<CoalitionBook> coalition_;  // colluding only
  net::Clock::TimePoint coalition_wait_until_{};
  std::unique_ptr<net::Timer> coalition_timer_;  // the wait's end
  struct HeldRound {
    std::uint64_t round;
    std::vector<std::uint32_t> heard;
    RoundRecord record;
  };
  std::optional<HeldRound> held_;    // the round held open for the fellows
  std::span<const float> leaf_own_;  // a leaf's honest vector this round
  RoundRecord leaf_attack_;          // what a leaf's attack recorded at round start
  bool attack_fallback_logged_ = false;
};

}  // namespace phalanx::node
