#include "node/exchange/round_wire.h"

#include <algorithm>

#include "compress/decode.h"
#include "compress/encoded.h"
#include "node/equivocation.h"

namespace phalanx::node {

bool RoundWire::send(std::uint32_t peer, std::uint64_t round, net::v1::RoundMessage::Kind kind,
                     const net::Transport::Payload& payload, float shift,
                     std::optional<std::uint64_t> sequence, bool own) {
  net::v1::RoundMessage header;
  header.set_round(round);
  header.set_sender(self_);
  header.set_kind(kind);
  if (key_ && !attachStatement(header, payload, own)) return false;
  header.set_sequence(sequence ? *sequence : ++next_sequence_[peer]);
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

void RoundWire::setSigner(std::shared_ptr<const net::SigningKey> key, std::string domain,
                          std::unique_ptr<SignedRounds> rounds,
                          std::shared_ptr<net::DigestMemo> memo) {
  key_ = std::move(key);
  memo_ = std::move(memo);
  domain_ = std::move(domain);
  signed_rounds_ = std::move(rounds);
}

RoundWire::Statement RoundWire::signedFor(std::uint64_t round, const net::Digest& digest) {
  // A restarted peer may redo rounds it signed before its crash, with other vectors: signing
  // them again would prove it an equivocator. It sends nothing for them instead (no signature).
  if (signed_rounds_ && !signed_rounds_->mayLog(round)) return Statement{round, digest, {}};
  ++metrics_.statements_signed_total;
  return Statement{round, digest, key_->sign(domain_, self_, round, digest)};
}

void RoundWire::state(std::uint64_t round, std::span<const float> row,
                      std::shared_ptr<const void> owner) {
  if (!key_) return;
  const net::Digest digest = net::digestVia(memo_.get(), row, std::move(owner));
  if (stated_ && stated_->round == round && stated_->digest == digest) return;
  stated_ = signedFor(round, digest);
  by_payload_.clear();
}

bool RoundWire::attachStatement(net::v1::RoundMessage& header,
                                const net::Transport::Payload& payload, bool own) {
  const std::uint64_t round = header.round();
  const Statement* statement = nullptr;
  if (!own && stated_ && stated_->round == round) {
    statement = &*stated_;
  } else if (header.kind() == net::v1::RoundMessage::DELTA) {
    return true;  // a delta's statement is of the replica it moves: unsigned unless stated
  } else {
    auto it = by_payload_.find(payload.get());
    if (it == by_payload_.end() || it->second.round != round) {
      if (!by_payload_.empty() && by_payload_.begin()->second.round != round) by_payload_.clear();
      scratch_.resize(dim_);
      if (!compress::decode(*payload, scratch_))
        return true;  // unreadable: its receivers refuse it
      it = by_payload_
               .insert_or_assign(payload.get(),
                                 signedFor(round, net::digestVia(memo_.get(), scratch_)))
               .first;
    }
    statement = &it->second;
  }
  if (statement->signature.empty()) return false;
  header.set_digest(std::string(net::bytesOf(statement->digest)));
  header.set_signature(statement->signature);
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

void RoundWire::sendEnvelope(std::uint32_t peer,
                             const std::shared_ptr<const net::v1::Envelope>& envelope) {
  transport_->sendShared(peer, envelope);
}

std::vector<std::uint32_t> RoundWire::livePeers() const { return transport_->livePeers(); }

}  // namespace phalanx::node
