// One peer's daemon (DESIGN.md "The data path of one round"): the lifecycle of its rounds — join,
// begin, wait, end, record, finish — around three objects the builder made (node/peer_builder.h):
// its exchange mode (node/exchange/round_exchange.h: what a round sends, hears and applies, with
// the CHOCO replicas, keyframes and sequence numbers), its honest round (node/honest_round.h:
// the rule and the equivocation digests) and its conduct (node/conduct.h: the honest round's
// hooks, or for a Byzantine peer only its Adversary's around them), whose hooks the round calls
// without asking which it is. Beside them it keeps what every mode and role shares: the round
// gate, checkpoints, metrics and the injected faults.
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
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/clock.h"
#include "net/faulty_transport.h"
#include "net/round_gate.h"
#include "net/transport.h"
#include "node/adversary/host.h"
#include "node/conduct.h"
#include "node/config.h"
#include "node/exchange/round_exchange.h"
#include "node/exchange/round_wire.h"
#include "node/fault_command.h"
#include "node/honest_round.h"
#include "node/metrics.h"
#include "node/peer_builder.h"
#include "node/round_record.h"
#include "topologies/topology.h"
#include "train/checkpoint.h"
#include "train/learner.h"

namespace phalanx::node {

class PeerNode : private AdversaryHost {
 public:
  using Role = PeerRole;

  // Builds the node's transport from its config and handlers.
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

  bool finished() const override { return state_ != State::kRunning; }
  // Stopped early because the model or its local step went NaN/Inf (after a last evaluation).
  bool diverged() const { return state_ == State::kDiverged; }
  Role role() const { return conduct_->role(); }
  std::uint64_t openRound() const { return gate_->openRound(); }
  std::uint64_t rounds() const { return setup_.rounds; }
  std::span<const float> parameters() const { return learner_->parameters(); }
  std::size_t dimension() const override { return learner_->dimension(); }
  // Counters as of the last round (transport figures refreshed by refreshMetrics()).
  const NodeMetrics& metrics() const { return metrics_; }
  void refreshMetrics();
  const net::Transport& transport() const { return *transport_; }
  // What this node offers in its Hello (node::configDigest over its learner and dimension).
  std::string configDigest() const;

 private:
  PeerNode(net::Clock* clock, asio::io_context* io, PeerSetup setup, TransportMaker make_transport);
  // --resume: the newest usable checkpoint of setup_.checkpoint_dir into the learner and the
  // exchange's state; returns the round it resumes at and the gate's learned deadline offsets.
  struct Resumed {
    std::uint64_t round = 0;
    std::vector<double> deadline_offsets;
  };
  Resumed restoreCheckpoint();
  // The record of the rounds this peer signed, beside its checkpoints (null: it keeps none).
  std::unique_ptr<SignedRounds> signedRounds();
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
  // An honest round's end once the learner has the mix: the record, the rounds a catch-up
  // skipped (run alone), and the next round.
  void closeRound(std::uint64_t round, RoundRecord& record, bool diverged);
  // A replica message for a round already closed (it missed the quorum close): applied to the
  // replica in sequence order, so the chain stays unbroken and no keyframe is needed, but it
  // enters no mix; its digest goes to the neighbours as for a mixed one. False for anything else
  // (the inbox counts it).
  bool applyLate(std::uint32_t peer, const net::Received& m);
  // The same for a message the node will not mix (late, or of a round a catch-up skipped).
  bool applyUnmixed(const net::Received& m);
  void saveCheckpoint(std::uint64_t next_round);
  enum class State { kRunning, kFinished, kDiverged };
  void finish(State why = State::kFinished);
  bool markFinished(State why);  // false when already finished; else stops the timer and the gate
  // Whom the transport connects: the neighbours and, colluding, the fellow colluders.
  std::vector<std::uint32_t> transportPeers() const;

  // What its adversary may use of it (node/adversary/host.h).
  std::uint32_t self() const override { return setup_.id; }
  const Config& config() const override { return setup_.config; }
  const topologies::Topology& topology() const override { return *setup_.topology; }
  const std::vector<std::uint32_t>& neighbours() const override { return neighbours_; }
  const std::vector<std::uint32_t>& awaited() const override { return awaited_; }
  const net::RoundGate& gate() const override { return *gate_; }
  spdlog::logger& log() const override { return *setup_.log; }
  net::Clock& clock() override { return clock_; }
  bool hubMode() const override { return exchange_->hubSide().has_value(); }
  bool isHub() const override { return exchange_->hubSide() == HubSide::kHub; }
  std::vector<std::uint32_t> livePeers() const override { return transport_->livePeers(); }
  void sendEnvelope(std::uint32_t peer, const net::v1::Envelope& envelope) override;
  net::Transport::Payload wirePayload(std::span<const float> vector) override;
  void sendWhole(std::uint32_t peer, std::uint64_t round, const net::Transport::Payload& payload,
                 std::optional<std::uint64_t> sequence) override;
  void askForKeyframe(std::uint32_t peer, std::uint64_t round) override;
  std::span<const float> rowOf(std::uint32_t peer) const override { return exchange_->rowOf(peer); }
  std::span<const float> publicReplica() const override { return exchange_->publicReplica(); }
  std::span<const float> leafOwnVector(std::uint64_t round) override;
  void applyBroadcast(std::uint64_t round, const std::vector<std::uint32_t>& heard,
                      RoundRecord& record) override;
  void waitForRound() override;
  void finishRound(std::uint64_t round, RoundRecord& record) override;

  std::unique_ptr<net::Clock> own_clock_;  // on an io_context: the real clock over it
  net::Clock& clock_;
  PeerSetup setup_;  // its log and rounds filled in
  std::vector<std::uint32_t> neighbours_;
  std::shared_ptr<train::Learner> learner_;  // shared with its owner when external
  NodeMetrics metrics_;
  std::map<net::Refusal, std::uint64_t> own_rejections_;  // beyond the transport's
  RoundWire wire_;
  std::unique_ptr<RoundExchange> exchange_;  // what the mode sends, hears and applies
  HonestRound honest_;                       // the honest data path (the rule, the digests)
  std::unique_ptr<Conduct> conduct_;         // honest, or its adversary's (node/conduct.h)
  std::vector<std::uint32_t> awaited_;       // the neighbours a round waits for (awaitedOf)
  // The real transport (TCP, or the simulation's) inside the injected faults' wrapper.
  std::unique_ptr<net::FaultyTransport> transport_;
  std::unique_ptr<net::RoundGate> gate_;
  std::unique_ptr<train::CheckpointStore> checkpoints_;
  // The next round's start: the join wait, a late start (the computation's virtual time, an
  // injected slowness, a staller).
  std::unique_ptr<net::Timer> start_timer_;
  net::Clock::TimePoint round_started_;
  std::function<void(const RoundRecord&)> on_round_;
  std::function<void()> on_finish_;
  State state_ = State::kRunning;
  std::chrono::milliseconds slow_{0};  // an injected fault beyond the transport's
  // Posted work checks it: a destroyed node (a crashed one replaced by its restart) runs nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace phalanx::node
