// CHOCO replica gossip as a peer runs it (ALGORITHMS.md §3.3, docs/PROTOCOL.md "Keyframes"): its
// public replica and the deltas that move it, a keyframe to each neighbour that is owed one (on
// connection, on a granted request, every compression.keyframe_every rounds), the neighbours'
// replicas applied in sequence order, EF21-W's wire scaling and DIANA's partial step. The model
// exchange gossips the model through it; the tracked gradient kinds (ef21*, diana) their
// momentum.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "compress/compressor.h"
#include "net/round_gate.h"
#include "net/transport.h"
#include "node/exchange/exchange_context.h"
#include "node/exchange/replicas.h"
#include "node/exchange/wire_scaling.h"
#include "train/checkpoint.h"

namespace phalanx::node {

// A resync request: `peer` is asked for a keyframe, this peer's replica of it being valid up to
// `last_sequence` (0: nothing in sequence).
void requestKeyframe(const ExchangeContext& context, std::uint32_t peer, std::uint64_t round,
                     std::uint64_t last_sequence);

class ReplicaGossip {
 public:
  // `codec`: null sends every message as a keyframe (uncompressed). `shift_step`: DIANA's alpha
  // (1 elsewhere).
  ReplicaGossip(ExchangeContext context, std::size_t dim,
                std::unique_ptr<compress::Compressor> codec, float shift_step, WireScaling scaling);

  // Round t's vector y out: a delta to each live neighbour, a keyframe to whoever is owed one
  // (`spam`: to everyone: a keyframe_spam attacker). False when y is not finite (nothing sent:
  // every later step would overflow too).
  bool publish(std::uint64_t t, std::span<const float> y, bool spam);
  // The round's KEYFRAME and DELTA messages applied to the replicas; returns the senders whose
  // replica is valid and was updated, ascending. A gap or a bad payload asks for a keyframe.
  std::vector<std::uint32_t> receive(net::RoundResult& result);
  // A replica message the round will not mix, applied in sequence order all the same (counted
  // as missed_round when applied, stale otherwise). False for any other kind.
  struct Unmixed {
    bool kept = false, applied = false;
  };
  Unmixed takeUnmixed(const net::Received& m);
  // `peer`'s row as the rule reads it, refreshed from its replica (EF21-W scales it).
  std::span<const float> refreshRow(std::uint32_t peer);
  std::span<const float> rowOf(std::uint32_t peer) const;
  // `peer`'s replica as its statement covers it (before any EF21-W scaling).
  std::span<const float> replicaOf(std::uint32_t peer) const { return replicas_.replica(peer); }
  // This peer's vector as its receivers read it.
  std::span<const float> own() const;

  // A new connection: both replicas of the edge restart from keyframes.
  void connected(std::uint32_t peer);
  void oweKeyframe(std::uint32_t peer) { keyframe_owed_.insert(peer); }
  void askForKeyframe(std::uint32_t peer, std::uint64_t round);
  // `v` as this peer publishes it (EF21-W: scaled; a view valid until the next call).
  std::span<const float> wireVector(std::span<const float> v) { return scaling_.wire(v); }
  // `v` as this peer puts a whole vector on the wire (dense, scaled as EF21-W scales).
  net::Transport::Payload wirePayload(std::span<const float> v);

  const PublicReplica& publicReplica() const { return public_; }
  void reset(std::span<const float> y) { public_.reset(y); }
  compress::Compressor* codec() const { return codec_.get(); }

  // Section "public_replica".
  void save(train::Checkpoint& c) const;
  void restore(const train::Checkpoint& c);

 private:
  // A KEYFRAME or DELTA into `sender`'s replica; nullopt for any other kind.
  std::optional<ReplicaTable::Result> apply(std::uint32_t sender, const net::Received& m);

  ExchangeContext context_;
  std::size_t dim_;
  std::unique_ptr<compress::Compressor> codec_;
  float shift_step_;
  WireScaling scaling_;
  PublicReplica public_;
  ReplicaTable replicas_;
  std::set<std::uint32_t> keyframe_owed_;
  std::map<std::uint32_t, std::vector<float>> scaled_rows_;  // EF21-W: replicas as read
};

}  // namespace phalanx::node
