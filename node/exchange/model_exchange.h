// exchange: model (ALGORITHMS.md §1, §3.3): the local momentum step, the model gossiped through
// its CHOCO replica, and the consensus step x += γ(z − ŷ) towards the rule's mix z (MoNNA's
// x = z exactly when uncompressed with γ = 1); gamma: auto follows the codec's measured
// contraction. Accordion sets the codec's level per layer.
#pragma once

#include "node/exchange/consensus_step.h"
#include "node/exchange/round_exchange.h"

namespace phalanx::node {

class ModelExchange : public RoundExchange {
 public:
  ModelExchange(ExchangeContext context, std::unique_ptr<ReplicaGossip> gossip,
                std::unique_ptr<AccordionStep> accordion);

  double send(std::uint64_t t, bool spam) override;
  // The model y out through the replica (an outer round's, after its local steps).
  void publish(std::uint64_t t, std::span<const float> y, bool spam);
  bool stepsAlone() const override { return true; }
  double stepAlone(std::uint64_t t) override;
  std::span<const float> pivot() const override { return gossip_->own(); }
  // The model itself when apply() is MoNNA's x = z and x is the vector published this round.
  std::span<float> mixTarget() override;
  void apply(std::uint64_t t, std::span<const float> mixed, RoundRecord& record) override;

  void save(train::Checkpoint& c) const override;
  void restore(const train::Checkpoint& c) override;

 private:
  // γ of x = y + γ(z − ŷ): the configured one, or gamma: auto's (Config's compression.gamma).
  double consensusStep() const;
  // The move toward the mix, γ·η; and whether apply() is MoNNA's x = z (uncompressed, γ·η = 1).
  double moveStep() const;
  bool takesTheMix() const;

  AutoConsensusStep auto_step_;
};

}  // namespace phalanx::node
