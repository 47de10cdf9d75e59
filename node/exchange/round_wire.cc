#include "node/exchange/round_wire.h"

#include <algorithm>

#include "compress/encoded.h"

namespace phalanx::node {

bool RoundWire::send(std::uint32_t peer, std::uint64_t round, net::v1::RoundMessage::Kind kind,
                     const net::Transport::Payload& payload, float shift,
                     std::optional<std::uint64_t> sequence) {
  net::v1::RoundMessage header;
  header.set_round(round);
  header.set_sender(self_);
  header.set_sequence(sequence ? *sequence : ++next_sequence_[peer]);
  header.set_kind(kind);
  header.set_codec(payload->size() > 1 ? (*payload)[1] : 0);
  if (kind == net::v1::RoundMessage::DELTA && shift != 1.0f) header.set_shift_step(shift);
  if (lie_) {
    if (const auto lie = lie_(header)) transport_->sendRound(peer, *lie, payload);
  }
  if (!transport_->sendRound(peer, header, payload)) return false;
  ++metrics_.messages_sent_total;
  metrics_.dense_bytes_total += dim_ * sizeof(float) + compress::kHeaderBytes;
  if (kind == net::v1::RoundMessage::KEYFRAME) ++metrics_.keyframes_sent_total;
  return true;
}

void RoundWire::sendToLive(const std::vector<std::uint32_t>& peers, std::uint64_t round,
                           net::v1::RoundMessage::Kind kind,
                           const net::Transport::Payload& payload) {
  const auto live = transport_->livePeers();
  for (const std::uint32_t j : peers) {
    if (std::find(live.begin(), live.end(), j) != live.end()) send(j, round, kind, payload);
  }
}

void RoundWire::sendEnvelope(std::uint32_t peer, const net::v1::Envelope& envelope) {
  transport_->send(peer, envelope);
}

std::vector<std::uint32_t> RoundWire::livePeers() const { return transport_->livePeers(); }

}  // namespace phalanx::node
