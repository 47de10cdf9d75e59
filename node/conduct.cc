#include "node/conduct.h"

namespace phalanx::node {

std::unique_ptr<Conduct> conductFor(const PeerSetup& setup, AdversaryHost& host,
                                    HonestRound& honest) {
  if (auto adversary = adversaryFor(setup, host))
    return std::make_unique<ByzantineConduct>(honest, std::move(adversary));
  return std::make_unique<HonestConduct>(honest, [&setup, &host, &honest] {
    return std::make_unique<ByzantineConduct>(honest, turnedByzantine(setup, host));
  });
}

std::expected<std::unique_ptr<Conduct>, std::string> HonestConduct::switchTo(
    const AttackSpec& spec) {
  if (spec.honest()) return nullptr;
  std::unique_ptr<Conduct> turned = turn_();
  if (auto switched = turned->switchTo(spec); !switched) return std::unexpected(switched.error());
  return turned;
}

std::expected<std::unique_ptr<Conduct>, std::string> ByzantineConduct::switchTo(
    const AttackSpec& spec) {
  if (auto switched = adversary_->switchTo(spec); !switched)
    return std::unexpected(switched.error());
  return nullptr;
}

void ByzantineConduct::takeDigest(std::uint32_t peer, const net::v1::RoundDigest& digest,
                                  std::uint64_t open) {
  if (sendsHonestVectors()) honest_.takeDigest(peer, digest, open);
}

void ByzantineConduct::witness(const net::Received& m, std::uint64_t open) {
  if (sendsHonestVectors()) honest_.witness(m, open);
}

std::chrono::microseconds ByzantineConduct::startDelay() const {
  // The computation's virtual time is the honest step's (an attacker's vector costs little).
  return (sendsHonestVectors() ? honest_.computeTime() : std::chrono::microseconds(0)) +
         adversary_->startDelay();
}

bool ByzantineConduct::send(std::uint64_t t, std::function<void()> resume) {
  if (sendsHonestVectors()) return honest_.send(t, std::move(resume), adversary_->spamsKeyframes());
  return !adversary_->startRound(t);
}

std::vector<std::uint32_t> ByzantineConduct::screen(std::uint64_t t,
                                                    const std::vector<std::uint32_t>& heard,
                                                    const net::RoundMessages& messages,
                                                    std::uint64_t open) {
  return sendsHonestVectors() ? honest_.screen(t, heard, messages, open) : heard;
}

bool ByzantineConduct::endRound(std::uint64_t t, std::vector<std::uint32_t>& heard,
                                RoundRecord& record) {
  if (!sendsHonestVectors()) return !adversary_->endRound(t, heard, record);
  honest_.mix(t, heard, record);
  adversary_->afterHonestMix(t);
  return true;
}

bool ByzantineConduct::diverged() const { return sendsHonestVectors() && honest_.diverged(); }

bool ByzantineConduct::handBack(std::uint64_t t, bool evaluation_due,
                                std::function<void()> resume) {
  return !sendsHonestVectors() || honest_.handBack(t, evaluation_due, std::move(resume));
}

std::optional<train::Evaluation> ByzantineConduct::evaluation(std::uint64_t t, bool due) {
  if (sendsHonestVectors()) return honest_.evaluation(due);
  honest_.passOver(t);
  return std::nullopt;
}

bool ByzantineConduct::stepsAlone() const { return sendsHonestVectors() && honest_.stepsAlone(); }

}  // namespace phalanx::node
