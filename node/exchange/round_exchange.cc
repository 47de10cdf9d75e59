#include "node/exchange/round_exchange.h"

#include <stdexcept>

namespace phalanx::node {

RoundExchange::RoundExchange(ExchangeContext context, std::unique_ptr<ReplicaGossip> gossip,
                             std::unique_ptr<DecodedRows> decoded)
    : context_(context), gossip_(std::move(gossip)), decoded_(std::move(decoded)) {
  if (!gossip_) zeros_.assign(context_.learner.dimension(), 0.0f);
}

RoundExchange::~RoundExchange() = default;

double RoundExchange::stepAlone(std::uint64_t) {
  throw std::logic_error("stepAlone: this exchange mode cannot step alone");
}

std::vector<std::uint32_t> RoundExchange::receive(net::RoundResult& result) {
  return decoded_ ? decoded_->receive(result) : gossip_->receive(result);
}

ReplicaGossip::Unmixed RoundExchange::takeUnmixed(const net::Received& m) {
  return gossip_ ? gossip_->takeUnmixed(m) : ReplicaGossip::Unmixed{};
}

std::span<const float> RoundExchange::rowOf(std::uint32_t peer) const {
  return decoded_ ? decoded_->rowOf(peer) : gossip_->rowOf(peer);
}

std::span<const float> RoundExchange::statementRow(std::uint32_t peer) const {
  return decoded_ ? decoded_->rowOf(peer) : gossip_->replicaOf(peer);
}

std::span<const float> RoundExchange::refreshedRow(std::uint32_t peer) {
  return gossip_->refreshRow(peer);
}

bool RoundExchange::applyBroadcast(std::uint64_t, const std::vector<std::uint32_t>&, RoundRecord&) {
  throw std::logic_error("applyBroadcast: only a leaf of exchange: hub applies a broadcast");
}

void RoundExchange::connected(std::uint32_t peer) {
  if (gossip_) gossip_->connected(peer);
}

void RoundExchange::oweKeyframes(const std::vector<std::uint32_t>& peers) {
  if (!gossip_) return;
  for (const std::uint32_t j : peers) gossip_->oweKeyframe(j);
}

bool RoundExchange::grantResync(std::uint32_t peer, std::uint64_t round) {
  if (!grants_.grant(peer, round)) return false;
  if (gossip_) gossip_->oweKeyframe(peer);
  return true;
}

void RoundExchange::askForKeyframe(std::uint32_t peer, std::uint64_t round) {
  if (gossip_) {
    gossip_->askForKeyframe(peer, round);
  } else {
    requestKeyframe(context_, peer, round, 0);  // nothing in sequence here: the request says so
  }
}

net::v1::RoundMessage::Kind RoundExchange::wholeKind() const {
  return gossip_ ? net::v1::RoundMessage::KEYFRAME : net::v1::RoundMessage::GRADIENT;
}

net::Transport::Payload RoundExchange::wirePayload(std::span<const float> v) {
  if (gossip_) return gossip_->wirePayload(v);
  return std::make_shared<const std::vector<std::uint8_t>>(encodeDense(v));
}

std::span<const float> RoundExchange::publicReplica() const {
  return gossip_ ? gossip_->publicReplica().values() : std::span<const float>(zeros_);
}

std::span<const float> RoundExchange::leafOwnVector(std::uint64_t) {
  throw std::logic_error("leafOwnVector: only a leaf of exchange: hub has one");
}

void RoundExchange::save(train::Checkpoint& c) const {
  if (gossip_) gossip_->save(c);
}

void RoundExchange::restore(const train::Checkpoint& c) {
  if (gossip_) gossip_->restore(c);
}

bool RoundExchange::stepAccordion(std::uint64_t t) {
  if (!accordion_) return false;
  const auto outcome = accordion_->step(t, context_.learner, context_.log);
  if (outcome.window_ended) context_.metrics.accordion_low_layers = accordion_->lowLayers();
  return outcome.changed;
}

}  // namespace phalanx::node
