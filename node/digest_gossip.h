// Equivocation evidence as an honest peer gossips it (docs/PROTOCOL.md "Equivocation"): the
// digest of every vector it heard in a round goes to every live neighbour; its own digests and
// its neighbours' reports go into the detector (node/equivocation.h); a convicted peer is logged
// once and, with mixing.exclude_equivocators, left out of every later mix. Only over a transport
// that authenticates its peers (TLS, or the simulation's): otherwise no report is evidence.
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <span>
#include <vector>

#include "net/proto/phalanx.pb.h"
#include "node/equivocation.h"
#include "node/exchange/round_exchange.h"
#include "node/exchange/round_wire.h"

namespace phalanx::node {

class DigestGossip {
 public:
  // `budget`: b of this peer's neighbourhood; `exclude`: mixing.exclude_equivocators.
  DigestGossip(std::uint32_t self, std::size_t budget, const std::vector<std::uint32_t>& neighbours,
               bool exclude, RoundWire& wire, spdlog::logger& log)
      : self_(self),
        budget_(budget),
        neighbours_(neighbours),
        exclude_(exclude),
        wire_(wire),
        log_(log),
        detector_(budget) {}

  // Round t's vectors heard (their rows as `exchange` holds them): their digests out and into
  // the detector; returns `heard` less the peers convicted. `open`: the round the node is in.
  std::vector<std::uint32_t> screen(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                                    const RoundExchange& exchange, std::uint64_t open);
  // Peer `peer`'s vector of an earlier round `round`, heard but not mixed: evidence all the same.
  void witness(std::uint64_t round, std::uint32_t peer, std::span<const float> row,
               std::uint64_t open);
  // A neighbour's report of what the senders it heard sent it.
  void take(std::uint32_t reporter, const net::v1::RoundDigest& digest, std::uint64_t open);

  const EquivocationDetector& detector() const { return detector_; }

 private:
  void broadcast(const net::v1::Envelope& envelope);
  void logConviction(std::uint32_t peer, std::uint64_t round, std::uint64_t open);

  std::uint32_t self_;
  std::size_t budget_;
  const std::vector<std::uint32_t>& neighbours_;
  bool exclude_;
  RoundWire& wire_;
  spdlog::logger& log_;
  EquivocationDetector detector_;
};

}  // namespace phalanx::node
