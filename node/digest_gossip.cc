#include "node/digest_gossip.h"

#include "base/text.h"

namespace phalanx::node {

void DigestGossip::witness(std::uint64_t round, std::uint32_t peer, std::span<const float> row,
                           std::uint64_t open) {
  const std::uint64_t h = vectorDigest(row);
  if (detector_.own(round, peer, h)) logConviction(peer, round, open);
  net::v1::Envelope envelope;
  envelope.mutable_digest()->set_round(round);
  envelope.mutable_digest()->add_senders(peer);
  envelope.mutable_digest()->add_hashes(h);
  broadcast(envelope);
}

void DigestGossip::take(std::uint32_t reporter, const net::v1::RoundDigest& d, std::uint64_t open) {
  // Without authenticated peers a report may come from anyone who named the reporter in a
  // Hello: b + 1 forged reports would convict an honest neighbour. Such reports are not evidence.
  if (!wire_.authenticated()) return;
  for (int k = 0; k < d.senders_size(); ++k) {
    const std::uint32_t sender = d.senders(k);
    if (sender == self_ || sender == reporter || !base::containsId(neighbours_, sender)) continue;
    if (detector_.report(reporter, d.round(), sender, d.hashes(k)))
      logConviction(sender, d.round(), open);
  }
}

std::vector<std::uint32_t> DigestGossip::screen(std::uint64_t t,
                                                const std::vector<std::uint32_t>& heard,
                                                const RoundExchange& exchange, std::uint64_t open) {
  detector_.advance(t);
  net::v1::Envelope envelope;
  net::v1::RoundDigest& digest = *envelope.mutable_digest();
  digest.set_round(t);
  for (const std::uint32_t j : heard) {
    const std::uint64_t h = vectorDigest(exchange.rowOf(j));
    digest.add_senders(j);
    digest.add_hashes(h);
    if (detector_.own(t, j, h)) logConviction(j, t, open);
  }
  if (!heard.empty()) broadcast(envelope);
  std::vector<std::uint32_t> kept;
  for (const std::uint32_t j : heard) {
    if (!detector_.convicted(j) || !exclude_) kept.push_back(j);
  }
  return kept;
}

void DigestGossip::broadcast(const net::v1::Envelope& envelope) {
  if (!wire_.authenticated()) return;  // nobody would act on it
  for (const std::uint32_t j : wire_.livePeers()) wire_.sendEnvelope(j, envelope);
}

void DigestGossip::logConviction(std::uint32_t peer, std::uint64_t round, std::uint64_t open) {
  log_.warn(
      "round {}: peer {} equivocated: more than {} neighbours hold a different vector from it for "
      "round {}; leaving it out of every later mix",
      open, peer, budget_, round);
}

}  // namespace phalanx::node
