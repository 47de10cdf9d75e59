// One peer's daemon (DESIGN.md "The data path of one round"; ALGORITHMS.md §1–§4): the local
// momentum step, CHOCO replica gossip over the transport (per-edge sequence numbers, keyframes
// on connection, on request and every K rounds), robust mixing of the replicas and the
// consensus step; in gradient-exchange mode the same loop carries gradients (DGC, EF14, EF21,
// EF21-SGDM: node/exchange/gradient_feedback.h) and steps with their robust aggregate; in outer
// mode a round is H local steps whose pseudo-gradient is exchanged and mixed, then an outer
// Nesterov step (node/exchange/outer_loop.h); in hub mode a star's centre aggregates the leaves'
// gradients and broadcasts the one update every peer applies (node/exchange/hub_broadcast.h);
// Accordion sets the codec's level per layer. A Byzantine peer holds an Adversary (node/adversary/)
// whose hooks the round calls; an honest one holds none. What a peer is built from, and the checks
// on it before its first round, are node/peer_builder.h's.
//
// Threading: a PeerNode lives on one clock (an asio::io_context run by one thread, or its actor in
// virtual time) with its Transport and RoundGate; every method must be called there. Destroy it
// after stop() or abort() and after the clock has stopped running it.
#pragma once

#include <spdlog/logger.h>

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "compress/accordion.h"
#include "compress/compressor.h"
#include "net/clock.h"
#include "net/faulty_transport.h"
#include "net/round_gate.h"
#include "net/transport.h"
#include "node/adversary/adversary.h"
#include "node/adversary/host.h"
#include "node/checkpoint.h"
#include "node/config.h"
#include "node/dataset.h"
#include "node/equivocation.h"
#include "node/exchange/accordion_step.h"
#include "node/exchange/consensus_step.h"
#include "node/exchange/gradient_feedback.h"
#include "node/exchange/hub_broadcast.h"
#include "node/exchange/outer_loop.h"
#include "node/exchange/replicas.h"
#include "node/exchange/resync_grants.h"
#include "node/exchange/wire_scaling.h"
#include "node/fault_command.h"
#include "node/learner.h"
#include "node/local_trainer.h"
#include "node/metrics.h"
#include "node/peer_builder.h"
#include "node/round_record.h"
#include "robust/aggregator.h"
#include "topologies/topology.h"

namespace phalanx::node {

class PeerNode : private AdversaryHost {
 public:
  using Role = PeerRole;

  // Builds the node's transport from its config and handlers (TcpTransport when empty).
  using TransportMaker =
      std::function<std::unique_ptr<net::Transport>(net::TransportConfig, net::TransportHandlers)>;

  // Throws ConfigError (unknown id, bad codec, rule or attack) and CheckpointError (--resume
  // with an unusable checkpoint folder). On an io_context: real time over TCP.
  PeerNode(asio::io_context& io, PeerSetup setup);
  // On any clock and transport (virtual time and the in-memory network: node/simulation.h).
  PeerNode(net::Clock& clock, PeerSetup setup, TransportMaker make_transport);
  ~PeerNode();
  PeerNode(const PeerNode&) = delete;
  PeerNode& operator=(const PeerNode&) = delete;

  // Binds the listening port (throws std::system_error when it is taken) and returns it.
  std::uint16_t listen();
  // Dials the neighbours at these addresses (default: the topology's).
  void connect(std::optional<std::vector<net::PeerAddress>> addresses = std::nullopt);

  // Runs the rounds: round 0 begins when every neighbour is connected or join_timeout has
  // passed. `on_round` runs after every round; `on_finish` once, after the last round (the
  // node has said Goodbye) or after stop().
  void start(std::function<void(const RoundRecord&)> on_round, std::function<void()> on_finish);
  // Goodbye to every neighbour; no more rounds.
  void stop();
  // A crash as the peers see it: connections closed without a Goodbye.
  void abort();

  // Fault injection (the control endpoint, a simulation's faults: node/fault_command.h).
  // "crash" aborts the node (what the process does next is its owner's business); "hang" blocks
  // the clock's thread; "slow" starts each round later; the others go to the fault wrapper
  // around the transport or switch the attack. An error says why the command was not applied.
  std::expected<void, std::string> inject(const FaultCommand& command);

  bool finished() const override { return finished_; }
  // Stopped early because the model or its local step went NaN/Inf (after a last evaluation).
  bool diverged() const { return diverged_; }
  Role role() const { return adversary_ ? adversary_->role() : Role::kHonest; }
  std::uint64_t openRound() const { return gate_->openRound(); }
  std::uint64_t rounds() const { return rounds_; }
  std::span<const float> parameters() const { return learner_->parameters(); }
  std::size_t dimension() const override { return dim_; }
  // Counters as of the last round (transport figures refreshed by refreshMetrics()).
  const NodeMetrics& metrics() const { return metrics_; }
  void refreshMetrics();
  const net::Transport& transport() const { return *transport_; }
  // What this node offers in its Hello (node::configDigest over its learner and dimension).
  std::string configDigest() const;

 private:
  PeerNode(net::Clock* clock, asio::io_context* io, PeerSetup setup, TransportMaker make_transport);
  // --resume: the newest usable checkpoint of setup_.checkpoint_dir into the learner, the
  // exchange's state, the public replica and the gate's learned deadline.
  void restoreCheckpoint();
  // What the transport calls when something arrives or a link goes up or down.
  net::TransportHandlers transportHandlers();
  void waitForNeighbours(net::Clock::TimePoint since);
  void beginRound();
  void runRound(std::uint64_t t);
  std::expected<void, std::string> switchAttack(const AttackSpec& spec);
  void endRound(net::RoundResult&& result);
  // The end of every round's record: evaluation on evaluation rounds and the last, metrics,
  // checkpoint, on_round. False when the node stops here (diverged, or stopped by on_round).
  bool recordRound(std::uint64_t round, RoundRecord& record, bool diverged);
  // Evaluation rounds: every rounds.eval_every, the last, and the one that diverged.
  bool evaluationDue(std::uint64_t round, bool diverged) const;
  // An honest round's end once the learner has the mix: waits (polling) while a learner that
  // evaluates itself owes the round its evaluation; then closeRound.
  // The record, the rounds a catch-up skipped (run alone), and the next round.
  void closeRound(std::uint64_t round, RoundRecord& record, bool diverged);
  // The honest step and message: the half step and its replica delta (model exchange), or the
  // local gradient through the GradientFeedback.
  void sendOwn(std::uint64_t round);
  // y (model) or the tracked momentum (gradient, ef21*) through the public replica: a delta, or
  // a keyframe to whoever is owed one.
  void publish(std::uint64_t round, std::span<const float> vector);
  // Accordion: the round's local gradient into the window; at its end, new levels.
  void accordionStep(std::uint64_t round);
  // The kind of a message that carries a whole vector: GRADIENT for standalone gradient
  // messages, KEYFRAME otherwise.
  net::v1::RoundMessage::Kind wholeVectorKind() const;
  bool standaloneGradients() const { return gradient_ && !gradient_->tracked(); }
  // exchange: hub — this node is the star's centre, or one of its leaves.
  bool isHub() const override { return hub_ && *hub_ == setup_.id; }
  bool isLeaf() const { return hub_ && *hub_ != setup_.id; }
  // The hub's round end: its aggregate to every leaf, and the same update applied here.
  void broadcastAggregate(std::uint64_t round);
  // A peer's round end in hub mode: the hub's update for the round applied, if it came.
  void applyBroadcast(std::uint64_t round, const std::vector<std::uint32_t>& heard,
                      RoundRecord& record) override;
  // What enters the rule: the node's own vector, and neighbour j's as heard this round.
  std::span<const float> pivot() const;
  std::span<const float> rowOf(std::uint32_t peer) const override;
  // Whether rows are kept decoded in received_ (standalone gradients, a leaf's broadcast,
  // EF21-W's unscaled replicas) rather than read from the replicas.
  bool decodedRows() const { return standaloneGradients() || isLeaf() || scaling_.active(); }
  // A tracked peer's vector as the rule reads it, refreshed after its replica changed.
  std::span<const float> refreshRow(std::uint32_t peer);
  // Applies this round's messages to the replicas; returns the senders whose replica is valid
  // and was updated this round, ascending.
  std::vector<std::uint32_t> applyMessages(net::RoundResult& result);
  void mix(std::uint64_t round, const std::vector<std::uint32_t>& heard, RoundRecord& record);
  void askForKeyframe(std::uint32_t peer, std::uint64_t round) override;
  // A replica message for a round already closed (it missed the quorum close): applied to the
  // replica in sequence order, so the chain stays unbroken and no keyframe is needed, but it
  // enters no mix; its digest goes to the neighbours as for a mixed one. False for anything else
  // (the inbox counts it).
  bool applyLate(std::uint32_t peer, const net::v1::RoundMessage& m);
  // The same for a message the node will not mix (late, or of a round a catch-up skipped).
  bool applyUnmixed(const net::v1::RoundMessage& m);
  // A neighbour asked for a keyframe: granted at once, then 16, 32, ... 128 rounds apart while it
  // keeps asking (a resync flood costs at most one keyframe per 128 rounds once it has run).
  void grantResync(std::uint32_t peer);
  // Digests of the vectors heard this round to every neighbour, this node's own digests into
  // the detector; returns `heard` less the peers convicted of equivocation.
  std::vector<std::uint32_t> screenEquivocators(std::uint64_t round,
                                                const std::vector<std::uint32_t>& heard);
  void takeDigest(std::uint32_t reporter, const net::v1::RoundDigest& digest);
  void logConviction(std::uint32_t peer, std::uint64_t round);
  // `sequence`: a fixed one (a replaying attacker) instead of the edge's next.
  bool sendTo(std::uint32_t peer, std::uint64_t round, net::v1::RoundMessage::Kind kind,
              const net::Transport::Payload& payload,
              std::optional<std::uint64_t> sequence = std::nullopt);
  void saveCheckpoint(std::uint64_t next_round);
  void finish();
  bool markFinished();  // false when already finished; else stops the timers and the gate
  // γ of x = y + γ(z − ŷ): the configured one, or gamma: auto's (Config's compression.gamma).
  double consensusStep() const;
  // Whom the transport connects: the neighbours and, colluding, the fellow colluders.
  std::vector<std::uint32_t> transportPeers() const;

  // What its adversary may use of it (node/adversary/host.h).
  std::uint32_t self() const override { return setup_.id; }
  const Config& config() const override { return setup_.config; }
  const topologies::Topology& topology() const override { return *setup_.topology; }
  const std::vector<std::uint32_t>& neighbours() const override { return neighbours_; }
  const std::vector<std::uint32_t>& awaited() const override { return awaited_; }
  const net::RoundGate& gate() const override { return *gate_; }
  spdlog::logger& log() const override { return *log_; }
  net::Clock& clock() override { return clock_; }
  bool hubMode() const override { return hub_.has_value(); }
  std::vector<std::uint32_t> livePeers() const override { return transport_->livePeers(); }
  void sendEnvelope(std::uint32_t peer, const net::v1::Envelope& envelope) override;
  net::Transport::Payload wirePayload(std::span<const float> vector) override;
  void sendWhole(std::uint32_t peer, std::uint64_t round, const net::Transport::Payload& payload,
                 std::optional<std::uint64_t> sequence) override;
  std::span<const float> publicReplica() const override { return public_replica_.values(); }
  std::span<const float> leafOwnVector(std::uint64_t round) override;
  void waitForRound() override;
  void finishRound(std::uint64_t round, RoundRecord& record) override;

  std::unique_ptr<net::Clock> own_clock_;  // on an io_context: the real clock over it
  net::Clock& clock_;
  PeerSetup setup_;
  std::shared_ptr<spdlog::logger> log_;
  std::size_t dim_ = 0;
  std::uint64_t rounds_ = 0;
  std::vector<std::uint32_t> neighbours_;
  std::vector<std::uint32_t> awaited_;  // the neighbours a round waits for (see the constructor)
  std::shared_ptr<Learner> learner_;    // shared with its owner when external
  std::unique_ptr<compress::Compressor> codec_;  // null: uncompressed (every message a keyframe)
  std::unique_ptr<GradientFeedback> gradient_;   // exchange: gradient and hub
  // DIANA: the shift's step alpha; the step this round's deltas take (a round that sends any
  // keyframe takes a full one: see publish).
  float shift_step_ = 1.0f, delta_shift_ = 1.0f;
  WireScaling scaling_;                      // EF21-W's; inactive in every other mode
  std::optional<std::uint32_t> hub_;         // exchange: hub — the star's centre
  std::unique_ptr<OuterLoop> outer_;         // exchange: outer
  std::unique_ptr<HubBroadcast> broadcast_;  // the hub's downlink
  std::vector<float> hub_own_;  // the hub's own vector: the rule's pivot (a leaf attacker's too)
  std::map<std::uint32_t, std::vector<float>> received_;  // standalone gradients, decoded
  std::unique_ptr<AccordionStep> accordion_;              // compression.adaptive
  std::unique_ptr<robust::Aggregator> aggregator_;
  std::unique_ptr<Adversary> adversary_;  // Byzantine peers only
  PublicReplica public_replica_;
  ReplicaTable replicas_;
  std::map<std::uint32_t, std::uint64_t> next_sequence_;  // outgoing, per neighbour
  std::set<std::uint32_t> keyframe_owed_;
  ResyncGrants resync_grants_;
  EquivocationDetector equivocation_;
  // The real transport (TCP, or the simulation's) inside the injected faults' wrapper.
  std::unique_ptr<net::FaultyTransport> transport_;
  std::unique_ptr<net::RoundGate> gate_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  std::unique_ptr<net::Timer> join_timer_;
  std::uint64_t first_round_ = 0;
  std::vector<float> mix_out_;
  double last_loss_ = NodeMetrics::kUnknown;
  AutoConsensusStep auto_step_;  // gamma: auto
  std::vector<double>
      restored_offsets_;  // the checkpoint's deadline offsets, until the gate exists
  net::Clock::TimePoint round_started_;
  NodeMetrics metrics_;
  std::map<net::Refusal, std::uint64_t> own_rejections_;  // beyond the transport's
  std::function<void(const RoundRecord&)> on_round_;
  std::function<void()> on_finish_;
  bool started_ = false, finished_ = false, diverged_ = false;
  bool nonfinite_vector_ = false;  // this round's vector to send was NaN/Inf
  // Injected faults beyond the transport's.
  std::chrono::milliseconds slow_{0};
  std::unique_ptr<net::Timer> slow_timer_;
  std::unique_ptr<net::Timer>
      hold_timer_;  // a rushing attacker waiting for the honest peers' round
  // Posted work checks it: a destroyed node (a crashed one replaced by its restart) runs nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace phalanx::node
