#include "node/exchange/gradient_exchange.h"

namespace phalanx::node {

GradientExchange::GradientExchange(ExchangeContext context,
                                   std::unique_ptr<GradientFeedback> feedback,
                                   std::unique_ptr<ReplicaGossip> gossip,
                                   std::unique_ptr<AccordionStep> accordion)
    : RoundExchange(context, std::move(gossip),
                    feedback->tracked()
                        ? nullptr
                        : std::make_unique<DecodedRows>(context, context.learner.dimension())),
      feedback_(std::move(feedback)) {
  accordion_ = std::move(accordion);
}

double GradientExchange::send(std::uint64_t t, bool spam) {
  const double loss = context_.learner.gradient(t);
  stepAccordion(t);
  sendGradient(t, context_.learner.lastGradient(), spam);
  return loss;
}

std::optional<std::vector<std::uint8_t>> GradientExchange::encode(std::uint64_t t,
                                                                  std::span<const float> g) {
  // DGC's warm-up advances per epoch, or per warmup_every rounds (short runs).
  const std::uint64_t every = context_.config.compression.warmup_every;
  auto q = feedback_->encode(g, every > 0 ? t / every : context_.learner.epochOf(t));
  if (!q) {
    context_.log.error("round {}: cannot encode the gradient ({}); sending nothing this round", t,
                       q.error());
    return std::nullopt;
  }
  return std::move(*q);
}

void GradientExchange::sendGradient(std::uint64_t t, std::span<const float> g, bool spam) {
  if (feedback_->tracked()) {
    if (!gossip_->publish(t, gossip_->wireVector(feedback_->track(g)), spam)) nonfinite_ = true;
    return;
  }
  auto q = encode(t, g);
  if (!q) return;
  const auto payload = std::make_shared<const std::vector<std::uint8_t>>(std::move(*q));
  context_.wire.sendToLive(context_.neighbours, t, net::v1::RoundMessage::GRADIENT, payload);
}

std::span<const float> GradientExchange::pivot() const {
  return feedback_->tracked() ? gossip_->own() : feedback_->own();
}

void GradientExchange::apply(std::uint64_t t, std::span<const float> mixed, RoundRecord&) {
  context_.learner.applyAggregate(t, mixed);
}

void GradientExchange::save(train::Checkpoint& c) const {
  RoundExchange::save(c);
  feedback_->save(c);
}

void GradientExchange::restore(const train::Checkpoint& c) {
  RoundExchange::restore(c);
  feedback_->restore(c);
}

}  // namespace phalanx::node
