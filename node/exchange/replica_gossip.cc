#include "node/exchange/replica_gossip.h"

#include "base/text.h"
#include "kernels/vector_ops.h"

namespace phalanx::node {
namespace {

// The step a DELTA's replica takes: the sender's claim (0, unset: a full step); its replica
// refuses a claim outside (0, 1].
float shiftOf(const net::Received& m) { return m.shift_step() == 0.0f ? 1.0f : m.shift_step(); }

}  // namespace

ReplicaGossip::ReplicaGossip(ExchangeContext context, std::size_t dim,
                             std::unique_ptr<compress::Compressor> codec, float shift_step,
                             WireScaling scaling)
    : context_(context),
      dim_(dim),
      codec_(std::move(codec)),
      shift_step_(shift_step),
      scaling_(std::move(scaling)),
      public_(dim),
      replicas_(dim) {}

bool ReplicaGossip::publish(std::uint64_t t, std::span<const float> y, bool spam) {
  if (!kernels::allFinite(y)) {  // the rule let something through (mean under attack, say)
    ++context_.metrics.mix_errors_total;
    context_.log.error("round {}: this node's vector is not finite; sending nothing", t);
    return false;
  }
  net::Transport::Payload delta, keyframe;
  const std::uint64_t every = context_.config.compression.keyframe_every;
  const bool periodic = codec_ && every > 0 && t % every == 0;
  const auto live = context_.wire.livePeers();
  // DIANA's partial shift step, except in a round that sends any keyframe: a keyframe carries
  // the new shift, so that round takes the full step and the keyframe and the deltas stand for
  // the same vector at every receiver (the digests of honest peers must agree).
  bool any_keyframe = periodic || spam;
  for (const std::uint32_t j : context_.neighbours)
    any_keyframe |= base::containsId(live, j) && keyframe_owed_.contains(j);
  const float delta_shift = any_keyframe ? 1.0f : shift_step_;
  if (!codec_) {
    public_.reset(y);  // uncompressed: ŷ_i = y exactly, every message a keyframe
  } else {
    auto q = public_.encodeDelta(y, *codec_, delta_shift);
    if (!q) {
      context_.log.error("round {}: cannot encode the model ({}); sending nothing this round", t,
                         q.error());
      return true;
    }
    delta = std::make_shared<const std::vector<std::uint8_t>>(std::move(*q));
  }
  // EF21-W: this node's vector as its receivers read it.
  if (scaling_.active()) scaling_.setOwn(public_.published());
  // Its statement: every receiver's replica of this node holds exactly this after the round.
  context_.wire.state(t, public_.published(), public_.publishedOwner());
  for (const std::uint32_t j : context_.neighbours) {
    if (!base::containsId(live, j)) {
      keyframe_owed_.insert(j);  // it learns our replica from a keyframe when it is back
      continue;
    }
    const bool full = !codec_ || periodic || keyframe_owed_.contains(j) || spam;
    if (full && !keyframe) {
      keyframe = public_.keyframe();
    }
    if (context_.wire.send(j, t,
                           full ? net::v1::RoundMessage::KEYFRAME : net::v1::RoundMessage::DELTA,
                           full ? keyframe : delta, delta_shift)) {
      keyframe_owed_.erase(j);
    } else {
      keyframe_owed_.insert(j);  // it will see a sequence gap; skip the round trip
    }
  }
  return true;
}

std::optional<ReplicaTable::Result> ReplicaGossip::apply(std::uint32_t sender,
                                                         const net::Received& m) {
  if (m.kind() == net::v1::RoundMessage::KEYFRAME)
    return replicas_.applyKeyframe(sender, m.sequence(), m.sharedPayload(), m.checks());
  if (m.kind() == net::v1::RoundMessage::DELTA)
    return replicas_.applyDelta(sender, m.sequence(), m.payload(), shiftOf(m));
  return std::nullopt;
}

std::vector<std::uint32_t> ReplicaGossip::receive(net::RoundResult& result) {
  std::vector<std::uint32_t> heard;
  for (auto& [sender, m] : result.messages) {
    const auto applied = apply(sender, m);
    if (!applied) {
      ++context_.rejections[net::Refusal::kUnexpectedKind];
      continue;
    }
    const ReplicaTable::Result& r = *applied;
    switch (r.outcome) {
      case ReplicaTable::Outcome::kApplied:
        if (scaling_.active()) refreshRow(sender);
        heard.push_back(sender);
        break;
      case ReplicaTable::Outcome::kStale:
        ++context_.rejections[net::Refusal::kStaleSequence];
        break;
      case ReplicaTable::Outcome::kGap:
        context_.log.info("round {}: peer {}: sequence gap at {}; asking for a keyframe",
                          result.round, sender, m.sequence());
        askForKeyframe(sender, result.round);
        break;
      case ReplicaTable::Outcome::kInvalid:
        ++context_.rejections[net::Refusal::kInvalidPayload];
        context_.log.warn("round {}: peer {}: payload rejected: {}", result.round, sender, r.error);
        askForKeyframe(sender, result.round);
        break;
    }
  }
  return heard;
}

ReplicaGossip::Unmixed ReplicaGossip::takeUnmixed(const net::Received& m) {
  const auto r = apply(m.sender(), m);
  if (!r) return {};
  const bool applied = r->outcome == ReplicaTable::Outcome::kApplied;
  ++context_.rejections[applied ? net::Refusal::kMissedRound : net::Refusal::kStale];
  return {.kept = true, .applied = applied};
}

std::span<const float> ReplicaGossip::refreshRow(std::uint32_t peer) {
  const std::span<const float> replica = replicas_.replica(peer);
  const std::optional<float> scale = scaling_.scaleOf(peer);
  if (!scale) return replica;
  std::vector<float>& row = scaled_rows_[peer];
  row.resize(replica.size());
  for (std::size_t i = 0; i < replica.size(); ++i) row[i] = replica[i] * *scale;
  return row;
}

std::span<const float> ReplicaGossip::rowOf(std::uint32_t peer) const {
  if (!scaling_.active()) return replicas_.replica(peer);
  const auto it = scaled_rows_.find(peer);
  return it == scaled_rows_.end() ? std::span<const float>() : std::span<const float>(it->second);
}

std::span<const float> ReplicaGossip::own() const {
  return scaling_.active() ? scaling_.own() : public_.published();
}

void ReplicaGossip::connected(std::uint32_t peer) {
  keyframe_owed_.insert(peer);
  replicas_.invalidate(peer);
}

void requestKeyframe(const ExchangeContext& context, std::uint32_t peer, std::uint64_t round,
                     std::uint64_t last_sequence) {
  net::v1::Envelope ask;
  ask.mutable_resync()->set_round(round);
  ask.mutable_resync()->set_last_sequence(last_sequence);
  context.wire.sendEnvelope(peer, ask);
  ++context.metrics.resyncs_requested_total;
}

void ReplicaGossip::askForKeyframe(std::uint32_t peer, std::uint64_t round) {
  requestKeyframe(context_, peer, round, replicas_.lastSequence(peer));
}

net::Transport::Payload ReplicaGossip::wirePayload(std::span<const float> v) {
  return std::make_shared<const std::vector<std::uint8_t>>(encodeDense(scaling_.wire(v)));
}

void ReplicaGossip::save(train::Checkpoint& c) const {
  c.putFloats("public_replica", public_.values());
}

void ReplicaGossip::restore(const train::Checkpoint& c) {
  const auto replica = c.floats("public_replica");
  if (replica.size() != dim_)
    throw train::CheckpointError("checkpoint: public_replica has the wrong size");
  public_.reset(replica);
}

}  // namespace phalanx::node
