#include "node/exchange/model_exchange.h"

#include <algorithm>
#include <cmath>

namespace phalanx::node {

ModelExchange::ModelExchange(ExchangeContext context, std::unique_ptr<ReplicaGossip> gossip,
                             std::unique_ptr<AccordionStep> accordion)
    : RoundExchange(context, std::move(gossip), nullptr) {
  accordion_ = std::move(accordion);
  gossip_->reset(context_.learner.parameters());  // the replicas start from the initial model
}

double ModelExchange::send(std::uint64_t t, bool spam) {
  const double loss = stepAlone(t);
  publish(t, context_.learner.parameters(), spam);
  return loss;
}

void ModelExchange::publish(std::uint64_t t, std::span<const float> y, bool spam) {
  if (!gossip_->publish(t, y, spam)) nonfinite_ = true;
}

double ModelExchange::stepAlone(std::uint64_t t) {
  const double loss = context_.learner.step(t);
  if (stepAccordion(t)) auto_step_.codecChanged();
  return loss;
}

double ModelExchange::consensusStep() const {
  if (const auto& fixed = context_.config.compression.gamma) return *fixed;
  compress::Compressor* codec = gossip_->codec();
  if (!codec) return 1.0;
  // CHOCO's step scales with the codec's contraction δ; on the compression grid the tuned γ
  // sat within a factor of two of the δ measured on the peers' own deltas for every biased
  // codec (ALGORITHMS.md §3.3), so auto takes that δ, backed off when the replica's residual
  // grows. An unbiased codec (QSGD) is a contraction only once scaled by 1/(1 + ω).
  return auto_step_.step(codec->varianceFactor(context_.learner.dimension()));
}

double ModelExchange::moveStep() const {
  // The gossip step η scales the move toward the mix as CHOCO's γ does (ALGORITHMS.md §2).
  return consensusStep() * context_.config.mixing.step.value_or(1.0);
}

bool ModelExchange::takesTheMix() const { return !gossip_->codec() && moveStep() == 1.0; }

std::span<float> ModelExchange::mixTarget() {
  // Uncompressed, the replica is a copy of the round's y (the model), read as it is unless
  // EF21-W scales it; a round whose y was refused (not finite) published nothing new.
  const bool unscaled = gossip_->own().data() == gossip_->publicReplica().published().data();
  if (!takesTheMix() || !unscaled || nonfinite_) return {};
  return context_.learner.parameters();
}

void ModelExchange::apply(std::uint64_t, std::span<const float> mixed, RoundRecord& record) {
  const std::span<float> x = context_.learner.parameters();
  if (takesTheMix()) {
    // MoNNA: x = z exactly (already there when the rule wrote into mixTarget()).
    if (mixed.data() != x.data()) std::copy(mixed.begin(), mixed.end(), x.begin());
    return;
  }
  const std::span<const float> own = pivot();
  const bool compressed = gossip_->codec() != nullptr;
  const PublicReplica& replica = gossip_->publicReplica();
  if (compressed) {
    // gamma: auto follows what the codec carried of the delta this round sent (before this
    // mix), averaged over about ten rounds (one round's top-k of a spiky delta says little about
    // the next), and how far the replica lags the model.
    auto_step_.observe(replica.contraction(), replica.residual());
  }
  const double gamma = moveStep();
  const float g = float(gamma);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += g * (mixed[i] - own[i]);
  if (compressed) {
    record.gamma = gamma;
    if (const double c = replica.contraction(); std::isfinite(c)) record.contraction = c;
    if (const double r = replica.residual(); std::isfinite(r)) record.residual = r;
  }
}

void ModelExchange::save(train::Checkpoint& c) const {
  RoundExchange::save(c);
  auto_step_.save(c);
}

void ModelExchange::restore(const train::Checkpoint& c) {
  RoundExchange::restore(c);
  // Absent (no compressed delta yet, or an older checkpoint): gamma: auto starts over.
  auto_step_.restore(c);
}

}  // namespace phalanx::node
