// How a peer behaves in each phase of its round: honestly (HonestConduct: its HonestRound and
// nothing else) or as its Adversary decides (ByzantineConduct: the adversary's hooks, and the
// honest round where what it sends is honest — a protocol role, label flipping, `none`). The
// builder picks one (conductFor); PeerNode calls the hooks in round order and branches on no role.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/proto/phalanx.pb.h"
#include "node/adversary/adversary.h"
#include "node/attack_spec.h"
#include "node/honest_round.h"
#include "node/round_record.h"

namespace phalanx::node {

class Conduct {
 public:
  virtual ~Conduct() = default;

  virtual PeerRole role() const = 0;
  virtual std::string name() const = 0;  // "honest", "byzantine: alie", ...
  // `inject attack`: null to stay this conduct (having switched what it runs), else the one
  // that replaces it. An error changes nothing.
  virtual std::expected<std::unique_ptr<Conduct>, std::string> switchTo(const AttackSpec& spec) = 0;

  // What arrives beside the round's messages: the colluders it connects to beyond its
  // neighbours and a message from one (false: garbage); a neighbour's digest report; a
  // neighbour's vector applied outside any mix (`open`: the round the peer is in).
  virtual std::vector<std::uint32_t> fellows() const = 0;
  virtual bool takeCoalition(std::uint32_t peer, const net::v1::Coalition& message) = 0;
  virtual void takeDigest(std::uint32_t peer, const net::v1::RoundDigest& digest,
                          std::uint64_t open) = 0;
  virtual void witness(const net::Received& m, std::uint64_t open) = 0;
  // A link went down (a colluder's round held open for its fellows may be complete now).
  virtual void linkDown() = 0;
  // A copy of an outgoing round message to send first, under a lie.
  virtual std::optional<net::v1::RoundMessage> lieAbout(
      const net::v1::RoundMessage& header) const = 0;

  // The round's hooks, in the order a round calls them.
  // Round t's start held back (a rushing attacker ahead of every honest neighbour).
  virtual bool holdsRound(std::uint64_t t) const = 0;
  virtual std::uint64_t announcedRound(std::uint64_t t) const = 0;
  // How long after the round opens its vector goes out (the computation's virtual time, a
  // staller's wait).
  virtual std::chrono::microseconds startDelay() const = 0;
  // Round t's vector out. False when the round's messages are not awaited now: the learner
  // has not handed its vector in (`resume` runs when it does), or the adversary took the round
  // over (a leaf's attack).
  virtual bool send(std::uint64_t t, std::function<void()> resume) = 0;
  // The rows heard (`messages`: the round's, with their signed statements) less those the
  // equivocation evidence leaves out.
  virtual std::vector<std::uint32_t> screen(std::uint64_t t,
                                            const std::vector<std::uint32_t>& heard,
                                            const net::RoundMessages& messages,
                                            std::uint64_t open) = 0;
  // What it does with the rows heard. False when the round is held open (a colluder waiting
  // for its fellows: it finishes the round through its host later).
  virtual bool endRound(std::uint64_t t, std::vector<std::uint32_t>& heard,
                        RoundRecord& record) = 0;
  virtual bool diverged() const = 0;
  // The mix back to its learner; false when the learner's report is still to come.
  virtual bool handBack(std::uint64_t t, bool evaluation_due, std::function<void()> resume) = 0;
  // The round's evaluation, when due (a Byzantine round passes the learner's vector over).
  virtual std::optional<train::Evaluation> evaluation(std::uint64_t t, bool due) = 0;
  // Whether the rounds a catch-up skipped are run alone, and one of them.
  virtual bool stepsAlone() const = 0;
  virtual void stepAlone(std::uint64_t round, RoundRecord& record) = 0;
  virtual const EquivocationDetector& detector() const = 0;
  // No more rounds: its timers stop.
  virtual void stop() = 0;
};

// The conduct of a peer that starts honest (`turn` makes the adversary it becomes on an
// `inject attack`) or Byzantine (its adversary made here; ConfigError where it cannot run).
std::unique_ptr<Conduct> conductFor(const PeerSetup& setup, AdversaryHost& host,
                                    HonestRound& honest);

class HonestConduct : public Conduct {
 public:
  HonestConduct(HonestRound& honest, std::function<std::unique_ptr<Conduct>()> turn)
      : honest_(honest), turn_(std::move(turn)) {}

  PeerRole role() const override { return PeerRole::kHonest; }
  std::string name() const override { return "honest"; }
  std::expected<std::unique_ptr<Conduct>, std::string> switchTo(const AttackSpec& spec) override;
  std::vector<std::uint32_t> fellows() const override { return {}; }
  bool takeCoalition(std::uint32_t, const net::v1::Coalition&) override { return false; }
  void takeDigest(std::uint32_t peer, const net::v1::RoundDigest& digest,
                  std::uint64_t open) override {
    honest_.takeDigest(peer, digest, open);
  }
  void witness(const net::Received& m, std::uint64_t open) override { honest_.witness(m, open); }
  void linkDown() override {}
  std::optional<net::v1::RoundMessage> lieAbout(const net::v1::RoundMessage&) const override {
    return std::nullopt;
  }
  bool holdsRound(std::uint64_t) const override { return false; }
  std::uint64_t announcedRound(std::uint64_t t) const override { return t; }
  std::chrono::microseconds startDelay() const override { return honest_.computeTime(); }
  bool send(std::uint64_t t, std::function<void()> resume) override {
    return honest_.send(t, std::move(resume));
  }
  std::vector<std::uint32_t> screen(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                    const net::RoundMessages& messages,
                                    std::uint64_t open) override {
    return honest_.screen(t, heard, messages, open);
  }
  bool endRound(std::uint64_t t, std::vector<std::uint32_t>& heard, RoundRecord& record) override {
    honest_.mix(t, heard, record);
    return true;
  }
  bool diverged() const override { return honest_.diverged(); }
  bool handBack(std::uint64_t t, bool evaluation_due, std::function<void()> resume) override {
    return honest_.handBack(t, evaluation_due, std::move(resume));
  }
  std::optional<train::Evaluation> evaluation(std::uint64_t, bool due) override {
    return honest_.evaluation(due);
  }
  bool stepsAlone() const override { return honest_.stepsAlone(); }
  void stepAlone(std::uint64_t round, RoundRecord& record) override {
    honest_.stepAlone(round, record);
  }
  const EquivocationDetector& detector() const override { return honest_.detector(); }
  void stop() override {}

 private:
  HonestRound& honest_;
  std::function<std::unique_ptr<Conduct>()> turn_;
};

// A Byzantine peer: its adversary's hooks, around the honest round while what it sends is
// honest (roleOf: a protocol role or label flipping runs the honest round and misbehaves
// around it). It stays Byzantine for the rest of its life, whatever it is switched to.
class ByzantineConduct : public Conduct {
 public:
  ByzantineConduct(HonestRound& honest, std::unique_ptr<Adversary> adversary)
      : honest_(honest), adversary_(std::move(adversary)) {}

  PeerRole role() const override { return adversary_->role(); }
  std::string name() const override { return "byzantine: " + adversary_->spec().name(); }
  std::expected<std::unique_ptr<Conduct>, std::string> switchTo(const AttackSpec& spec) override;
  std::vector<std::uint32_t> fellows() const override { return adversary_->fellows(); }
  bool takeCoalition(std::uint32_t peer, const net::v1::Coalition& message) override {
    return adversary_->takeCoalition(peer, message);
  }
  void takeDigest(std::uint32_t peer, const net::v1::RoundDigest& digest,
                  std::uint64_t open) override;
  void witness(const net::Received& m, std::uint64_t open) override;
  void linkDown() override { adversary_->linkDown(); }
  std::optional<net::v1::RoundMessage> lieAbout(
      const net::v1::RoundMessage& header) const override {
    return adversary_->lieAbout(header);
  }
  bool holdsRound(std::uint64_t t) const override { return adversary_->holdsRound(t); }
  std::uint64_t announcedRound(std::uint64_t t) const override {
    return adversary_->announcedRound(t);
  }
  std::chrono::microseconds startDelay() const override;
  bool send(std::uint64_t t, std::function<void()> resume) override;
  std::vector<std::uint32_t> screen(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                    const net::RoundMessages& messages,
                                    std::uint64_t open) override;
  bool endRound(std::uint64_t t, std::vector<std::uint32_t>& heard, RoundRecord& record) override;
  bool diverged() const override;
  bool handBack(std::uint64_t t, bool evaluation_due, std::function<void()> resume) override;
  std::optional<train::Evaluation> evaluation(std::uint64_t t, bool due) override;
  bool stepsAlone() const override;
  void stepAlone(std::uint64_t round, RoundRecord& record) override {
    honest_.stepAlone(round, record);
  }
  const EquivocationDetector& detector() const override { return honest_.detector(); }
  void stop() override { adversary_->stop(); }

 private:
  bool sendsHonestVectors() const { return adversary_->role() == PeerRole::kHonest; }

  HonestRound& honest_;
  std::unique_ptr<Adversary> adversary_;
};

}  // namespace phalanx::node
