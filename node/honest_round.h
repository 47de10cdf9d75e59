// What an honest peer does with a round (DESIGN.md "The data path of one round"): its learner's
// vector out through the exchange, the rows heard screened with the equivocation digests, the
// robust rule's mix applied (or, at a leaf of exchange: hub, the hub's broadcast), the mix handed
// back to the learner, evaluation, and the rounds a catch-up skipped run alone. A Byzantine peer
// that sends honest vectors (a protocol role, label flipping, an attack switched to `none`) runs
// it too, through its conduct (node/conduct.h).
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "net/proto/phalanx.pb.h"
#include "node/digest_gossip.h"
#include "node/exchange/round_exchange.h"
#include "node/exchange/round_wire.h"
#include "node/metrics.h"
#include "node/peer_builder.h"
#include "node/round_mix.h"
#include "node/round_record.h"
#include "train/learner.h"

namespace phalanx::node {

class HonestRound {
 public:
  // `neighbours`, `learner`, `exchange`, `wire`, `metrics` and `log` are the peer's and outlive
  // this; the rule is made from the setup (aggregatorFor).
  HonestRound(const PeerSetup& setup, const std::vector<std::uint32_t>& neighbours,
              train::Learner& learner, RoundExchange& exchange, RoundWire& wire,
              NodeMetrics& metrics, std::map<net::Refusal, std::uint64_t>& rejections,
              spdlog::logger& log);

  // The virtual time its computation of a round takes (an outer round computes H steps).
  std::chrono::microseconds computeTime() const;
  // Round t's vector out (`keyframes`: every message a keyframe, a keyframe spammer's). False
  // when the learner has not handed it in yet: `resume` runs when it does.
  bool send(std::uint64_t t, std::function<void()> resume, bool keyframes = false);
  // `heard` less the peers the digests convict (where the mode corroborates its rows).
  std::vector<std::uint32_t> screen(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                    const net::RoundMessages& messages, std::uint64_t open);
  // The rule over the pivot and the rows heard, applied (a leaf: the hub's broadcast); the
  // record's loss and learning rate.
  void mix(std::uint64_t t, const std::vector<std::uint32_t>& heard, RoundRecord& record);
  // The model or the step it sent went NaN/Inf.
  bool diverged() const;
  // The mix back to the learner; false when its report is still to come (`resume` runs then).
  bool handBack(std::uint64_t t, bool evaluation_due, std::function<void()> resume);
  std::optional<train::Evaluation> evaluation(bool due);
  // Round t passed over (a Byzantine round): an external loop is paced by it all the same.
  void passOver(std::uint64_t t);
  // Whether the rounds a catch-up skipped are run alone here, and one of them.
  bool stepsAlone() const;
  void stepAlone(std::uint64_t round, RoundRecord& record);

  // Equivocation evidence: a neighbour's digest report; a vector applied outside any mix.
  void takeDigest(std::uint32_t peer, const net::v1::RoundDigest& digest, std::uint64_t open);
  void witness(const net::Received& m, std::uint64_t open);
  const EquivocationDetector& detector() const { return digests_.detector(); }

 private:
  const PeerSetup& setup_;
  train::Learner& learner_;
  RoundExchange& exchange_;
  NodeMetrics& metrics_;
  spdlog::logger& log_;
  RoundMix mix_;
  DigestGossip digests_;
  double last_loss_ = NodeMetrics::kUnknown;
};

}  // namespace phalanx::node
