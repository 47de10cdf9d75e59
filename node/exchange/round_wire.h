// The round messages one peer sends (docs/PROTOCOL.md "Round messages"): the header each carries
// (round, sender, the edge's next sequence number, kind, codec, DIANA's step), the counters, and
// — for a Byzantine peer whose tactic lies about its headers — a second header for the same
// payload. Every exchange mode and adversary sends through it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/digest_memo.h"
#include "net/proto/phalanx.pb.h"
#include "net/signing.h"
#include "net/transport.h"
#include "node/metrics.h"
#include "node/signed_rounds.h"

namespace phalanx::node {

class RoundWire {
 public:
  // What a lying peer sends before the true header (none: it does not lie about this one).
  using Lie = std::function<std::optional<net::v1::RoundMessage>(const net::v1::RoundMessage&)>;

  RoundWire(std::uint32_t self, std::size_t dim, NodeMetrics& metrics)
      : self_(self), dim_(dim), metrics_(metrics) {}

  // The transport it sends on (made after the peer's exchange and adversary, which it serves).
  void attach(net::Transport& transport) { transport_ = &transport; }
  void setLie(Lie lie) { lie_ = std::move(lie); }
  // Sign every round message with `key` (docs/PROTOCOL.md "Equivocation"); `rounds`, when
  // given, keeps the rounds already signed across restarts, so that none is signed twice.
  // `memo`: digests shared with the other peers of this process (a simulation); null: none.
  void setSigner(std::shared_ptr<const net::SigningKey> key, std::string domain,
                 std::unique_ptr<SignedRounds> rounds, std::shared_ptr<net::DigestMemo> memo);
  bool signs() const { return key_ != nullptr; }
  // The vector every receiver of round `round`'s messages holds for this peer after them (its
  // public replica): signed once, its statement travels in each of the round's messages. Without
  // it a KEYFRAME's or GRADIENT's statement is of its decoded payload; a DELTA has none.
  // `owner` keeps `row` alive and unchanged (an immutable keyframe): the digest memo then holds
  // it instead of a copy.
  void state(std::uint64_t round, std::span<const float> row,
             std::shared_ptr<const void> owner = nullptr);

  // Round `round`'s message of `kind` to `peer`; false when the link refused it. `shift`: the
  // step a DELTA's replica takes (DIANA; 1: a full one, left unset on the wire). `sequence`: a
  // fixed one (a replaying attacker) instead of the edge's next.
  // `own`: the statement is of `payload` itself, not of the vector stated for the round (an
  // adversary's per-target vectors).
  bool send(std::uint32_t peer, std::uint64_t round, net::v1::RoundMessage::Kind kind,
            const net::Transport::Payload& payload, float shift = 1.0f,
            std::optional<std::uint64_t> sequence = std::nullopt, bool own = false);
  // The same message to each of `peers` that is connected now.
  void sendToLive(const std::vector<std::uint32_t>& peers, std::uint64_t round,
                  net::v1::RoundMessage::Kind kind, const net::Transport::Payload& payload);
  // Anything else (a resync request, a digest) to one peer.
  void sendEnvelope(std::uint32_t peer, const net::v1::Envelope& envelope);
  // One envelope to several peers (net::Transport::sendShared).
  void sendEnvelope(std::uint32_t peer, const std::shared_ptr<const net::v1::Envelope>& envelope);
  std::vector<std::uint32_t> livePeers() const;
  // Whether the transport proves its peers' ids (net::Transport::authenticated).
  bool authenticated() const { return transport_ && transport_->authenticated(); }

 private:
  struct Statement {
    std::uint64_t round = 0;
    net::Digest digest{};
    std::string signature;
  };
  // The statement `header` carries: false when it may not be signed (a round signed before a
  // restart) and must not be sent.
  bool attachStatement(net::v1::RoundMessage& header, const net::Transport::Payload& payload,
                       bool own);
  Statement signedFor(std::uint64_t round, const net::Digest& digest);

  std::uint32_t self_;
  std::size_t dim_;
  NodeMetrics& metrics_;
  net::Transport* transport_ = nullptr;
  Lie lie_;
  std::map<std::uint32_t, std::uint64_t> next_sequence_;  // per neighbour
  std::shared_ptr<const net::SigningKey> key_;
  std::shared_ptr<net::DigestMemo> memo_;
  std::string domain_;  // the run's (net::statementBytes)
  std::unique_ptr<SignedRounds> signed_rounds_;
  std::optional<Statement> stated_;  // the round's public vector, signed
  // Signatures of payload statements, by payload: an adversary's vector to several targets is
  // signed once. Cleared each round.
  std::map<const void*, Statement> by_payload_;
  std::vector<float> scratch_;
};

}  // namespace phalanx::node
