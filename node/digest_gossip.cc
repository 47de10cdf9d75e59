#include "node/digest_gossip.h"

#include <google/protobuf/arena.h>

#include "base/text.h"

namespace phalanx::node {
namespace {

// An envelope on its own arena, shared by every receiver once built. A list of statements is
// three fields a statement; on the heap each string object is an allocation of its own,
// scattered over a simulation's gigabytes, and every receiver's read of one is a cache miss
// (the relay was mostly those). On an arena the message and its string objects sit in a block
// or two, built and freed at once (protobuf 3.21 still keeps a string's bytes beyond 15 on
// the heap).
class ArenaEnvelope {
 public:
  static ArenaEnvelope make() {
    ArenaEnvelope e;
    e.holder_ = std::make_shared<Holder>();
    return e;
  }
  ArenaEnvelope() = default;  // none yet
  explicit operator bool() const { return holder_ != nullptr; }
  net::v1::Envelope* operator->() { return holder_->message; }
  std::shared_ptr<const net::v1::Envelope> share() && {
    net::v1::Envelope* message = holder_->message;
    return {std::move(holder_), message};
  }

 private:
  // The first block inside the envelope's own allocation, which stays under glibc's 1 KiB
  // large-request line (a larger malloc consolidates the allocator's fast bins: a first try
  // with a 4 KiB block spent 2.5 % of a 1,000-peer run there). A report of a few statements
  // fits; a longer relay grows the arena as protobuf does.
  struct Holder {
    alignas(8) char first_block[896];
    google::protobuf::Arena arena{first_block, sizeof first_block};
    net::v1::Envelope* message = google::protobuf::Arena::CreateMessage<net::v1::Envelope>(&arena);
  };
  std::shared_ptr<Holder> holder_;
};

void addStatement(net::v1::RoundDigest& d, const Statement& s) {
  d.add_senders(s.sender);
  d.add_hashes(std::string(net::bytesOf(s.digest)));
  d.add_signatures(s.signature);
}

// An empty report of `round`'s statements as this node heard them (one hop).
ArenaEnvelope reportOf(std::uint64_t round) {
  ArenaEnvelope envelope = ArenaEnvelope::make();
  envelope->mutable_digest()->set_round(round);
  envelope->mutable_digest()->set_hops(1);
  return envelope;
}

void putStatement(net::v1::EquivocationProof& p, const Proof& proof) {
  p.set_sender(proof.a.sender);
  p.set_round(proof.a.round);
  p.set_digest_a(std::string(net::bytesOf(proof.a.digest)));
  p.set_signature_a(proof.a.signature);
  p.set_digest_b(std::string(net::bytesOf(proof.b.digest)));
  p.set_signature_b(proof.b.signature);
}

}  // namespace

std::vector<std::uint32_t> DigestGossip::screen(std::uint64_t t,
                                                const std::vector<std::uint32_t>& heard,
                                                const net::RoundMessages& messages,
                                                RoundExchange& exchange, std::uint64_t open) {
  if (!active()) return heard;
  detector_.advance(t);
  ArenaEnvelope envelope = reportOf(t);
  net::v1::RoundDigest& digest = *envelope->mutable_digest();
  std::vector<std::uint32_t> kept;
  for (const std::uint32_t j : heard) {
    const auto m = messages.find(j);
    if (m == messages.end() || m->second.signature().empty()) {
      ++rejections_[net::Refusal::kUnsigned];
      continue;
    }
    const auto claimed = net::digestOf(m->second.digest());
    // Not the vector it signed, or this replica went astray.
    if (!claimed || !net::digestMatches(memo_, exchange.statementRow(j), *claimed)) {
      ++rejections_[net::Refusal::kStatementMismatch];
      exchange.askForKeyframe(j, t);
      continue;
    }
    const Statement s{j, t, *claimed, m->second.signature()};
    addStatement(digest, s);
    handle(detector_.own(s), j, t, open);
    if (!detector_.convicted(j) || !exclude_) kept.push_back(j);
  }
  if (digest.senders_size() > 0) broadcast(std::move(envelope).share(), self_);
  return kept;
}

void DigestGossip::witness(const net::Received& m, std::span<const float> row, std::uint64_t open) {
  if (!active() || m.signature().empty()) return;
  const auto claimed = net::digestOf(m.digest());
  if (!claimed || !net::digestMatches(memo_, row, *claimed)) return;
  const Statement s{m.sender(), m.round(), *claimed, m.signature()};
  handle(detector_.own(s), s.sender, s.round, open);
  ArenaEnvelope envelope = reportOf(s.round);
  addStatement(*envelope->mutable_digest(), s);
  broadcast(std::move(envelope).share(), self_);
}

void DigestGossip::take(std::uint32_t reporter, const net::v1::RoundDigest& d, std::uint64_t open) {
  if (!active()) return;
  if (d.has_proof()) {
    const auto& p = d.proof();
    if (!topology_.contains(p.sender())) {
      ++rejections_[net::Refusal::kUnknownSender];
      return;
    }
    const auto a = net::digestOf(p.digest_a()), b = net::digestOf(p.digest_b());
    if (!a || !b) return;
    const Proof proof{{p.sender(), p.round(), *a, p.signature_a()},
                      {p.sender(), p.round(), *b, p.signature_b()}};
    if (detector_.proof(reporter, proof)) {
      logConviction(p.sender(), p.round(), open, true);
      ++metrics_.proofs_sent_total;
      ArenaEnvelope envelope = ArenaEnvelope::make();
      *envelope->mutable_digest() = d;
      broadcast(std::move(envelope).share(), reporter);
    }
    return;
  }
  if (d.signatures_size() != d.senders_size() || d.hashes_size() != d.senders_size())
    return;  // unsigned: no evidence
  // A reporter's own claim of hops is only trusted downwards: it can make a statement travel
  // less far, and at most `reach` edges whatever it says.
  const std::uint64_t hops = std::max<std::uint64_t>(d.hops(), 1);
  ArenaEnvelope relay;  // made for the first fresh statement: many reports have none
  net::v1::RoundDigest* onward = nullptr;
  for (int k = 0; k < d.senders_size(); ++k) {
    const std::uint32_t sender = d.senders(k);
    if (!topology_.contains(sender)) {  // made up: it would only take memory (and has no reach)
      ++rejections_[net::Refusal::kUnknownSender];
      continue;
    }
    const auto digest = net::digestOf(d.hashes(k));
    if (sender == self_ || sender == reporter || !digest) continue;
    const auto outcome = detector_.report(reporter, sender, d.round(), *digest, d.signatures(k));
    handle(outcome, sender, d.round(), open);
    if (!outcome.fresh || hops >= reach(sender)) continue;
    if (!relay) {
      relay = ArenaEnvelope::make();
      onward = relay->mutable_digest();
      onward->set_round(d.round());
      onward->set_hops(std::uint32_t(std::min<std::uint64_t>(hops + 1, UINT32_MAX)));
    }
    addStatement(*onward, {sender, d.round(), *digest, d.signatures(k)});
  }
  if (relay) {
    metrics_.statements_relayed_total += std::uint64_t(onward->senders_size());
    broadcast(std::move(relay).share(), reporter);
  }
}

void DigestGossip::handle(const EquivocationDetector::Outcome& outcome, std::uint32_t sender,
                          std::uint64_t round, std::uint64_t open) {
  if (!outcome.convicted) return;
  logConviction(sender, round, open, outcome.proof.has_value());
  if (!outcome.proof) return;
  ArenaEnvelope envelope = ArenaEnvelope::make();
  envelope->mutable_digest()->set_round(round);
  putStatement(*envelope->mutable_digest()->mutable_proof(), *outcome.proof);
  ++metrics_.proofs_sent_total;
  broadcast(std::move(envelope).share(), self_);
}

void DigestGossip::broadcast(const std::shared_ptr<const net::v1::Envelope>& shared,
                             std::uint32_t except) {
  for (const std::uint32_t j : wire_.livePeers()) {
    if (j != except) wire_.sendEnvelope(j, shared);
  }
}

void DigestGossip::logConviction(std::uint32_t peer, std::uint64_t round, std::uint64_t open,
                                 bool proven) {
  log_.warn(
      "round {}: peer {} equivocated in round {}: {}{}", open, peer, round,
      proven ? "it signed two different vectors for that round"
             : "it sent this node a vector whose signature does not hold",
      exclude_ && base::containsId(neighbours_, peer) ? "; leaving it out of every later mix" : "");
}

}  // namespace phalanx::node
