#include "node/exchange/hub_exchange.h"

#include "base/text.h"
#include "kernels/vector_ops.h"

namespace phalanx::node {

HubExchange::HubExchange(ExchangeContext context, std::uint32_t hub,
                         std::unique_ptr<GradientFeedback> feedback,
                         std::unique_ptr<ReplicaGossip> gossip,
                         std::unique_ptr<AccordionStep> accordion,
                         std::unique_ptr<HubBroadcast> broadcast)
    : GradientExchange(context, std::move(feedback), std::move(gossip), std::move(accordion)),
      hub_(hub),
      side_(hub == context.self ? HubSide::kHub : HubSide::kLeaf),
      broadcast_(std::move(broadcast)) {
  // A leaf hears the broadcast, which stands alone whatever its uplink does.
  if (side_ == HubSide::kLeaf && !decoded_) {
    decoded_ = std::make_unique<DecodedRows>(context_, context_.learner.dimension());
  }
}

void HubExchange::sendGradient(std::uint64_t t, std::span<const float> g, bool spam) {
  if (side_ == HubSide::kLeaf) {
    GradientExchange::sendGradient(t, g, spam);
    return;
  }
  if (feedback_->tracked()) {
    const std::span<const float> m = feedback_->track(g);
    own_.assign(m.begin(), m.end());
    nonfinite_ = !kernels::allFinite(own_);
  } else if (!encode(t, g)) {  // the message stays here: what leaves the hub is its broadcast
    nonfinite_ = !kernels::allFinite(g);
  } else {
    own_.assign(feedback_->own().begin(), feedback_->own().end());
  }
}

std::span<const float> HubExchange::pivot() const {
  return side_ == HubSide::kHub ? std::span<const float>(own_) : GradientExchange::pivot();
}

void HubExchange::apply(std::uint64_t t, std::span<const float> mixed, RoundRecord&) {
  auto q = broadcast_->encode(mixed);
  if (!q) {
    ++context_.metrics.mix_errors_total;
    context_.log.error("round {}: cannot encode the broadcast ({}); no update this round", t,
                       q.error());
    return;
  }
  const auto payload = std::make_shared<const std::vector<std::uint8_t>>(std::move(*q));
  context_.wire.sendToLive(context_.neighbours, t, net::v1::RoundMessage::GRADIENT, payload);
  context_.learner.applyAggregate(t, broadcast_->update());
}

bool HubExchange::applyBroadcast(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                 RoundRecord& record) {
  // Out of step with the others when it is missing (the hub resends nothing).
  if (!base::containsId(heard, hub_)) return false;
  context_.learner.applyAggregate(t, decoded_->rowOf(hub_));
  record.mixed.push_back(hub_);
  ++context_.metrics.peer_heard_total[hub_];
  return true;
}

std::span<const float> HubExchange::leafOwnVector(std::uint64_t t) {
  context_.learner.gradient(t);
  const std::span<const float> g = context_.learner.lastGradient();
  const std::span<const float> own =
      feedback_->kind() == GradientFeedback::Kind::kDgc ? g : feedback_->track(g);
  own_.assign(own.begin(), own.end());
  return own_;
}

void HubExchange::save(train::Checkpoint& c) const {
  GradientExchange::save(c);
  if (broadcast_) broadcast_->save(c);
}

void HubExchange::restore(const train::Checkpoint& c) {
  GradientExchange::restore(c);
  if (broadcast_) broadcast_->restore(c);
}

}  // namespace phalanx::node
