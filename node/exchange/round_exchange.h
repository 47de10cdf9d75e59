// What one round of an exchange mode sends, receives and applies (DESIGN.md "The data path of one
// round"). The peer's round (node/peer_node.h) calls, in order: send, receive, the rule over
// pivot() and rowOf(), apply — and knows no mode. One class per mode, each in its own file:
// ModelExchange (model_exchange.h), GradientExchange (gradient_exchange.h), HubExchange
// (hub_exchange.h) and OuterExchange (outer_exchange.h); makeExchange (peer_builder.h) picks one.
//
// The base keeps what the modes share: the vectors a round hears, either as CHOCO replicas
// (replica_gossip.h: the model, the tracked gradient kinds) or decoded whole (decoded_rows.h:
// standalone gradients, the hub's broadcast), and the keyframes granted on request.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "net/proto/phalanx.pb.h"
#include "net/round_gate.h"
#include "net/transport.h"
#include "node/exchange/accordion_step.h"
#include "node/exchange/decoded_rows.h"
#include "node/exchange/exchange_context.h"
#include "node/exchange/replica_gossip.h"
#include "node/exchange/resync_grants.h"
#include "node/round_record.h"
#include "train/checkpoint.h"

namespace phalanx::node {

// exchange: hub — which end of the star a peer is.
enum class HubSide { kHub, kLeaf };

class RoundExchange {
 public:
  virtual ~RoundExchange();

  // ---- one honest round
  // Local steps per round (the computation's virtual time counts them).
  virtual std::uint64_t stepsPerRound() const { return 1; }
  // The local step index of round t's first step (schedules run in local steps).
  virtual std::uint64_t firstStep(std::uint64_t t) const { return t; }
  // Local steps taken by the end of round t, when the record reports them (exchange: outer).
  virtual std::optional<std::uint64_t> recordedSteps(std::uint64_t t) const {
    (void)t;
    return std::nullopt;
  }
  // Round t's local step(s) and its message(s) out; returns the training loss. `spam`: every
  // neighbour gets a keyframe (a keyframe_spam attacker's honest-looking vector).
  virtual double send(std::uint64_t t, bool spam) = 0;
  // Whether a round a catch-up skipped can run alone (a local step, nothing heard), and that
  // step: its training loss.
  virtual bool stepsAlone() const { return false; }
  virtual double stepAlone(std::uint64_t t);
  // The round's messages into rows: the senders heard, ascending.
  std::vector<std::uint32_t> receive(net::RoundResult& result);
  // A message of a round the node will not mix (late, or skipped by a catch-up): kept when the
  // mode keeps replicas in sequence; applied when it moved the sender's replica.
  ReplicaGossip::Unmixed takeUnmixed(const net::Received& m);
  // The rule's input: the vector it centres on, and neighbour `peer`'s as heard (empty: not).
  virtual std::span<const float> pivot() const = 0;
  std::span<const float> rowOf(std::uint32_t peer) const;
  // What `peer`'s signed statement is of: its replica, or its decoded vector (unscaled).
  std::span<const float> statementRow(std::uint32_t peer) const;
  // `peer`'s row refreshed after an unmixed message moved its replica.
  std::span<const float> refreshedRow(std::uint32_t peer);
  // Whether the round mixes (a leaf applies the hub's broadcast instead: applyBroadcast).
  virtual bool mixes() const { return true; }
  // Where the rule may write its output in place of scratch: the buffer apply() would
  // overwrite with it verbatim, holding exactly what pivot() holds (so a failed mix can put it
  // back); empty where apply() does more than copy. Spares a model-sized copy a round.
  virtual std::span<float> mixTarget() { return {}; }
  // The rule's output applied (to the model, or broadcast by the hub); `mixed` may be
  // mixTarget() itself.
  virtual void apply(std::uint64_t t, std::span<const float> mixed, RoundRecord& record) = 0;
  // A leaf's round end: the hub's update applied when it was heard (false: this model did not
  // step).
  virtual bool applyBroadcast(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                              RoundRecord& record);
  // Whether the neighbours can corroborate what this peer heard (equivocation digests): not
  // in exchange: hub, where no leaf hears another.
  virtual bool corroborates() const { return true; }
  // The bytes sent as the mode's direction counts them (a hub's downlink, a leaf's uplink).
  virtual void countDirected(NodeMetrics& metrics) const { (void)metrics; }
  // Whether the vector to send went NaN/Inf (the node stops: every later step would too).
  bool sentNonFinite() const { return nonfinite_; }

  // ---- links
  // A new connection, and an attack switched: keyframes owed (replicas restart).
  void connected(std::uint32_t peer);
  void oweKeyframes(const std::vector<std::uint32_t>& peers);
  // A neighbour asked for a keyframe: granted at once, then 16, 32, ... 128 rounds apart while
  // it keeps asking; false when refused (throttled).
  bool grantResync(std::uint32_t peer, std::uint64_t round);
  void askForKeyframe(std::uint32_t peer, std::uint64_t round);

  // ---- what an adversary sends through this mode
  // The kind of a message that carries a whole vector (GRADIENT where vectors stand alone).
  net::v1::RoundMessage::Kind wholeKind() const;
  net::Transport::Payload wirePayload(std::span<const float> v);
  // What this peer's public replica holds (zeros where it keeps none).
  std::span<const float> publicReplica() const;
  virtual std::optional<HubSide> hubSide() const { return std::nullopt; }
  // A leaf's honest vector for round t, computed as an honest leaf would (uncompressed).
  virtual std::span<const float> leafOwnVector(std::uint64_t t);

  // ---- state that survives a restart
  virtual void save(train::Checkpoint& c) const;
  virtual void restore(const train::Checkpoint& c);

 protected:
  // `gossip`: the replicas (null where vectors stand alone); `decoded`: where what is heard
  // stands alone (null: it is read from the replicas).
  RoundExchange(ExchangeContext context, std::unique_ptr<ReplicaGossip> gossip,
                std::unique_ptr<DecodedRows> decoded);

  // Accordion (compression.adaptive): round t's local gradient into its window; true when the
  // codec's levels changed.
  bool stepAccordion(std::uint64_t t);

  ExchangeContext context_;
  std::unique_ptr<ReplicaGossip> gossip_;
  std::unique_ptr<DecodedRows> decoded_;
  std::unique_ptr<AccordionStep> accordion_;  // null: no adaptive level
  bool nonfinite_ = false;

 private:
  ResyncGrants grants_;
  std::vector<float> zeros_;  // the public replica where none is kept
};

}  // namespace phalanx::node
