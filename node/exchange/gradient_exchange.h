// exchange: gradient (ALGORITHMS.md §3.2, §3.4): the local gradient goes out through its error
// feedback (gradient_feedback.h) — standalone GRADIENT messages (dgc, none, ef14), or the
// momentum tracked through the replica (ef21, ef21_sgdm, ef21_w with its wire scaling, diana) —
// and the node steps with the robust aggregate of what it heard, its own vector as the pivot.
#pragma once

#include <optional>
#include <vector>

#include "node/exchange/gradient_feedback.h"
#include "node/exchange/round_exchange.h"

namespace phalanx::node {

class GradientExchange : public RoundExchange {
 public:
  // `gossip`: the replica the tracked kinds publish through (null for the standalone ones).
  GradientExchange(ExchangeContext context, std::unique_ptr<GradientFeedback> feedback,
                   std::unique_ptr<ReplicaGossip> gossip, std::unique_ptr<AccordionStep> accordion);

  double send(std::uint64_t t, bool spam) override;
  // Gradient g of round t out (an outer round's pseudo-gradient, after its local steps).
  virtual void sendGradient(std::uint64_t t, std::span<const float> g, bool spam);
  std::span<const float> pivot() const override;
  void apply(std::uint64_t t, std::span<const float> mixed, RoundRecord& record) override;

  void save(train::Checkpoint& c) const override;
  void restore(const train::Checkpoint& c) override;

 protected:
  // A standalone kind's GRADIENT message for g (DGC's warm-up epoch from round t); on a codec
  // error, logged, nothing.
  std::optional<std::vector<std::uint8_t>> encode(std::uint64_t t, std::span<const float> g);

  std::unique_ptr<GradientFeedback> feedback_;
};

}  // namespace phalanx::node
