#include "node/digest_gossip.h"

#include "base/text.h"
#include "topologies/analysis.h"

namespace phalanx::node {
namespace {

void addStatement(net::v1::RoundDigest& d, const Statement& s) {
  d.add_senders(s.sender);
  d.add_hashes(std::string(net::bytesOf(s.digest)));
  d.add_signatures(s.signature);
}

// An empty report of `round`'s statements as this node heard them (one hop).
net::v1::Envelope reportOf(std::uint64_t round) {
  net::v1::Envelope envelope;
  envelope.mutable_digest()->set_round(round);
  envelope.mutable_digest()->set_hops(1);
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

std::uint64_t DigestGossip::reach(std::uint32_t sender) {
  const auto [it, added] = reach_.try_emplace(sender, 0);
  if (added) it->second = topologies::detourLength(topology_, sender);
  return it->second;
}

std::vector<std::uint32_t> DigestGossip::screen(std::uint64_t t,
                                                const std::vector<std::uint32_t>& heard,
                                                const net::RoundMessages& messages,
                                                RoundExchange& exchange, std::uint64_t open) {
  if (!active()) return heard;
  detector_.advance(t);
  net::v1::Envelope envelope = reportOf(t);
  net::v1::RoundDigest& digest = *envelope.mutable_digest();
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
  if (digest.senders_size() > 0) broadcast(std::move(envelope), self_);
  return kept;
}

void DigestGossip::witness(const net::Received& m, std::span<const float> row, std::uint64_t open) {
  if (!active() || m.signature().empty()) return;
  const auto claimed = net::digestOf(m.digest());
  if (!claimed || !net::digestMatches(memo_, row, *claimed)) return;
  const Statement s{m.sender(), m.round(), *claimed, m.signature()};
  handle(detector_.own(s), s.sender, s.round, open);
  net::v1::Envelope envelope = reportOf(s.round);
  addStatement(*envelope.mutable_digest(), s);
  broadcast(std::move(envelope), self_);
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
      net::v1::Envelope envelope;
      *envelope.mutable_digest() = d;
      broadcast(std::move(envelope), reporter);
    }
    return;
  }
  if (d.signatures_size() != d.senders_size() || d.hashes_size() != d.senders_size())
    return;  // unsigned: no evidence
  // A reporter's own claim of hops is only trusted downwards: it can make a statement travel
  // less far, and at most `reach` edges whatever it says.
  const std::uint64_t hops = std::max<std::uint64_t>(d.hops(), 1);
  net::v1::Envelope relay;
  net::v1::RoundDigest& onward = *relay.mutable_digest();
  onward.set_round(d.round());
  onward.set_hops(std::uint32_t(std::min<std::uint64_t>(hops + 1, UINT32_MAX)));
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
    if (outcome.fresh && hops < reach(sender))
      addStatement(onward, {sender, d.round(), *digest, d.signatures(k)});
  }
  if (onward.senders_size() > 0) {
    metrics_.statements_relayed_total += std::uint64_t(onward.senders_size());
    broadcast(std::move(relay), reporter);
  }
}

void DigestGossip::handle(const EquivocationDetector::Outcome& outcome, std::uint32_t sender,
                          std::uint64_t round, std::uint64_t open) {
  if (!outcome.convicted) return;
  logConviction(sender, round, open, outcome.proof.has_value());
  if (!outcome.proof) return;
  net::v1::Envelope envelope;
  envelope.mutable_digest()->set_round(round);
  putStatement(*envelope.mutable_digest()->mutable_proof(), *outcome.proof);
  ++metrics_.proofs_sent_total;
  broadcast(std::move(envelope), self_);
}

void DigestGossip::broadcast(net::v1::Envelope envelope, std::uint32_t except) {
  const auto shared = std::make_shared<const net::v1::Envelope>(std::move(envelope));
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
