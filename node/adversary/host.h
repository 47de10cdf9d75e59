// What a Byzantine peer's adversary may use of the peer it lives in (PeerNode implements it):
// the topology and its place in it, the network, the vectors the round heard, and the round's
// continuation when the adversary holds a round open (a colluder waiting for its fellows).
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "net/clock.h"
#include "net/proto/phalanx.pb.h"
#include "net/round_gate.h"
#include "net/transport.h"
#include "node/config.h"
#include "node/round_record.h"
#include "topologies/topology.h"

namespace phalanx::node {

class AdversaryHost {
 public:
  virtual ~AdversaryHost() = default;

  virtual std::uint32_t self() const = 0;
  virtual const Config& config() const = 0;
  virtual const topologies::Topology& topology() const = 0;
  virtual const std::vector<std::uint32_t>& neighbours() const = 0;
  // The neighbours a round waits for, and the gate that waits (the rushing hold reads them).
  virtual const std::vector<std::uint32_t>& awaited() const = 0;
  virtual const net::RoundGate& gate() const = 0;
  virtual spdlog::logger& log() const = 0;
  virtual net::Clock& clock() = 0;
  virtual std::size_t dimension() const = 0;
  // exchange: hub, and whether this peer is its centre (else a leaf).
  virtual bool hubMode() const = 0;
  virtual bool isHub() const = 0;
  virtual bool finished() const = 0;

  virtual std::vector<std::uint32_t> livePeers() const = 0;
  virtual void sendEnvelope(std::uint32_t peer, const net::v1::Envelope& envelope) = 0;
  // `vector` as this peer puts a whole vector on the wire (dense, scaled as the exchange
  // scales what it sends).
  virtual net::Transport::Payload wirePayload(std::span<const float> vector) = 0;
  // A whole-vector message of `round` to `peer`; `sequence`: a fixed one instead of the edge's
  // next (a replaying attacker's).
  virtual void sendWhole(std::uint32_t peer, std::uint64_t round,
                         const net::Transport::Payload& payload,
                         std::optional<std::uint64_t> sequence = std::nullopt) = 0;
  virtual void askForKeyframe(std::uint32_t peer, std::uint64_t round) = 0;

  // Neighbour `peer`'s vector as heard this round (empty when none).
  virtual std::span<const float> rowOf(std::uint32_t peer) const = 0;
  // What this peer's public replica holds (a replay attacker resends it).
  virtual std::span<const float> publicReplica() const = 0;
  // A leaf of exchange: hub: its honest vector for round t, computed as an honest leaf would
  // (its local gradient, tracked as the exchange tracks it, uncompressed).
  virtual std::span<const float> leafOwnVector(std::uint64_t round) = 0;
  // A leaf's round end: the hub's update for the round applied, if it came.
  virtual void applyBroadcast(std::uint64_t round, const std::vector<std::uint32_t>& heard,
                              RoundRecord& record) = 0;

  // The round's continuation: wait for the round's messages (then the peer's round end runs),
  // or record a round the adversary held open and go on to the next.
  virtual void waitForRound() = 0;
  virtual void finishRound(std::uint64_t round, RoundRecord& record) = 0;
};

}  // namespace phalanx::node
