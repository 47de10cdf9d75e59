#include "node/peer_node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "base/text.h"
#include "compress/compressor.h"
#include "kernels/vector_ops.h"
#include "net/asio_clock.h"
#include "net/tcp_transport.h"

namespace phalanx::node {
namespace {

using Clock = net::Clock;

// What the setup leaves to defaults, filled in once (leveldb's SanitizeOptions).
PeerSetup normalized(PeerSetup setup) {
  if (!setup.log) setup.log = spdlog::default_logger();
  if (!setup.config.mixing.step) {
    const std::set<std::uint32_t> declared = declaredByzantine(setup);
    setup.config = withResolvedStep(std::move(setup.config), *setup.topology, declared);
    setup.log->info("mixing.step: auto is {:.6f} (1/lambda_max of the honest Laplacian)",
                    *setup.config.mixing.step);
  }
  if (setup.rounds == 0) setup.rounds = setup.config.rounds.count;
  return setup;
}

}  // namespace

PeerNode::PeerNode(asio::io_context& io, PeerSetup setup)
    : PeerNode(nullptr, &io, std::move(setup),
               [&io](net::TransportConfig config, net::TransportHandlers handlers) {
                 return std::make_unique<net::TcpTransport>(io, std::move(config),
                                                            std::move(handlers));
               }) {}

PeerNode::PeerNode(net::Clock& clock, PeerSetup setup, TransportMaker make_transport)
    : PeerNode(&clock, nullptr, std::move(setup), std::move(make_transport)) {}

PeerNode::PeerNode(net::Clock* clock, asio::io_context* io, PeerSetup setup,
                   TransportMaker make_transport)
    : own_clock_(clock ? nullptr : std::make_unique<net::AsioClock>(*io)),
      clock_(clock ? *clock : *own_clock_),
      setup_(normalized(std::move(setup))),
      neighbours_(neighboursOf(setup_)),
      learner_(learnerFor(setup_, attackFor(setup_))),
      wire_(setup_.id, learner_->dimension(), metrics_),
      exchange_(makeExchange(buildExchange(setup_, *learner_, log()),
                             ExchangeContext{setup_.id, setup_.config, neighbours_, *learner_,
                                             wire_, log(), metrics_, own_rejections_})),
      honest_(setup_, neighbours_, *learner_, *exchange_, wire_, metrics_, own_rejections_, log()),
      conduct_(conductFor(setup_, *this, honest_)),
      awaited_(awaitedOf(setup_, neighbours_)),
      start_timer_(clock_.timer()) {
  metrics_.node = setup_.id;
  wire_.setLie([this](const net::v1::RoundMessage& header) { return conduct_->lieAbout(header); });
  const Resumed resumed = setup_.checkpoint_dir.empty() ? Resumed{} : restoreCheckpoint();
  if (setup_.signing_key)
    wire_.setSigner(setup_.signing_key, configDigest(), signedRounds(), setup_.digest_memo);
  const net::TransportConfig tc =
      transportConfig(setup_, dimension(), configDigest(), transportPeers());
  transport_ = std::make_unique<net::FaultyTransport>(
      clock_, transportHandlers(),
      [&](net::TransportHandlers handlers) { return make_transport(tc, std::move(handlers)); },
      setup_.config.seed * 104729 + setup_.id);
  wire_.attach(*transport_);
  gate_ = std::make_unique<net::RoundGate>(clock_, *transport_, awaited_,
                                           gateConfig(setup_, awaited_.size(), setup_.rounds),
                                           resumed.round);
  // A resumed node paces its rounds by the arrivals it had learned, not by the ceiling until it
  // has seen 8 more: alone (its neighbours gone, or finished), it would wait the ceiling each
  // round.
  gate_->restoreDeadline(resumed.deadline_offsets);
}

std::unique_ptr<SignedRounds> PeerNode::signedRounds() {
  if (setup_.checkpoint_dir.empty()) return nullptr;
  const std::filesystem::path file = setup_.checkpoint_dir / "signed-rounds";
  std::error_code ec;
  if (!setup_.resume) std::filesystem::remove(file, ec);  // a fresh run signs from round 0
  std::filesystem::create_directories(setup_.checkpoint_dir, ec);
  auto rounds = SignedRounds::open(file);
  if (!rounds) throw ConfigError(rounds.error());
  if (const auto before = (*rounds)->before())
    log().info("rounds up to {} were signed before this restart: this peer sends nothing for them",
               *before);
  return std::move(*rounds);
}

PeerNode::Resumed PeerNode::restoreCheckpoint() {
  checkpoints_ = std::make_unique<train::CheckpointStore>(setup_.checkpoint_dir);
  if (!setup_.resume) return {};
  auto loaded = checkpoints_->loadLatest();
  for (const auto& why : loaded.skipped) log().warn("checkpoint skipped: {}", why);
  if (!loaded.checkpoint) {
    log().warn("--resume: no usable checkpoint in {}; starting at round 0",
               setup_.checkpoint_dir.string());
    return {};
  }
  learner_->restore(*loaded.checkpoint);
  exchange_->restore(*loaded.checkpoint);
  Resumed resumed{.round = loaded.checkpoint->round};
  if (loaded.checkpoint->has("deadline_offsets_ms")) {
    const auto offsets = loaded.checkpoint->floats("deadline_offsets_ms");
    resumed.deadline_offsets.assign(offsets.begin(), offsets.end());
  }
  log().info("resumed from {} at round {}", loaded.file.string(), resumed.round);
  return resumed;
}

net::TransportHandlers PeerNode::transportHandlers() {
  return net::TransportHandlers{
      .on_round =
          [this](std::uint32_t peer, net::Received& m) {
            if (m.sender() == peer && m.round() < gate_->openRound()) {
              gate_->noteLate(peer, m.round());
            }
            if (!applyLate(peer, m)) gate_->add(std::move(m));
          },
      .on_resync =
          [this](std::uint32_t peer, const net::v1::ResyncRequest&) {
            if (!exchange_->grantResync(peer, gate_->openRound()))
              ++own_rejections_[net::Refusal::kResyncThrottled];
          },
      .on_heartbeat = [this](std::uint32_t peer,
                             std::uint64_t round) { gate_->noteRound(peer, round); },
      .on_digest =
          [this](std::uint32_t peer, const net::v1::RoundDigest& d) {
            conduct_->takeDigest(peer, d, gate_->openRound());
          },
      .on_coalition =
          [this](std::uint32_t peer, const net::v1::Coalition& c) {
            // From a neighbour that is no fellow (honest peers have none): garbage.
            if (!conduct_->takeCoalition(peer, c)) ++own_rejections_[net::Refusal::kCoalition];
          },
      .on_up =
          [this](std::uint32_t peer) {
            // A new connection: whatever was in flight on the old one is lost, so both replicas
            // of this edge restart from keyframes; and whatever the old one claimed or buffered
            // is dropped (it may have been an impostor's).
            exchange_->connected(peer);
            gate_->linkUp(peer);
            log().info("round {}: peer {} connected", gate_->openRound(), peer);
          },
      .on_down =
          [this](std::uint32_t peer, std::string_view why) {
            log().info("round {}: peer {} disconnected: {}", gate_->openRound(), peer, why);
            gate_->poke();
            conduct_->linkDown();
          }};
}

PeerNode::~PeerNode() = default;

std::uint16_t PeerNode::listen() { return transport_->listen(); }

void PeerNode::connect(std::optional<std::vector<net::PeerAddress>> addresses) {
  if (!addresses) {
    addresses.emplace();
    for (const std::uint32_t j : transportPeers()) {
      const auto& spec = setup_.topology->node(j);
      addresses->push_back({j, spec.host, spec.port});
    }
  }
  transport_->connect(std::move(*addresses));
}

void PeerNode::start(std::function<void(const RoundRecord&)> on_round,
                     std::function<void()> on_finish) {
  on_round_ = std::move(on_round);
  on_finish_ = std::move(on_finish);
  log().info(
      "round {}: starting as {} ({} parameters, {} neighbours, rule {}, codec {}, {} rounds)",
      gate_->openRound(), conduct_->name(), dimension(), neighbours_.size(),
      robust::kRules.name(setup_.config.mixing.rule),
      compress::codecName(setup_.config.compression.codec), setup_.rounds);
  waitForNeighbours(clock_.now());
}

void PeerNode::waitForNeighbours(Clock::TimePoint since) {
  if (finished()) return;
  // Everyone connected, and every awaited neighbour heard from once (its round is known).
  const auto live = transport_->livePeers();
  const bool everyone = std::all_of(neighbours_.begin(), neighbours_.end(),
                                    [&](std::uint32_t j) { return base::containsId(live, j); }) &&
                        std::all_of(awaited_.begin(), awaited_.end(),
                                    [&](std::uint32_t j) { return gate_->knowsRoundOf(j); });
  if (!everyone && clock_.now() - since < setup_.join_timeout) {
    start_timer_->start(std::chrono::milliseconds(20), [this, since] { waitForNeighbours(since); });
    return;
  }
  // A late joiner (or a restart) adopts the round most of its neighbours are in.
  const std::uint64_t own = gate_->openRound();
  if (gate_->catchUp()) {
    log().info("round {}: joining the neighbours at round {}", own, gate_->openRound());
    for (const auto& m : gate_->takeSkipped()) applyUnmixed(m);
  }
  beginRound();
}

void PeerNode::beginRound() {
  if (finished()) return;
  const std::uint64_t t = gate_->openRound();
  if (t >= setup_.rounds) {
    finish();
    return;
  }
  if (conduct_->holdsRound(t)) {  // until its neighbours' vectors or rounds move on
    gate_->whenChanged([this, alive = std::weak_ptr<bool>(alive_)] {
      if (!alive.expired()) beginRound();
    });
    return;
  }
  transport_->setRound(conduct_->announcedRound(t));
  round_started_ = clock_.now();
  // The computation's virtual time, an injected slowness, a staller's wait.
  const std::chrono::microseconds late = conduct_->startDelay() + slow_;
  if (late.count() > 0) {
    start_timer_->start(late, [this, t] {
      if (!finished()) runRound(t);
    });
    return;
  }
  runRound(t);
}

void PeerNode::runRound(std::uint64_t t) {
  // A learner fed from another thread may not have round t's vector yet: the round resumes on
  // this clock when it comes. The neighbours meanwhile hear this round announced in the
  // heartbeats and wait up to their deadline.
  if (!conduct_->send(t, [this, t, alive = std::weak_ptr<bool>(alive_)] {
        clock_.post([this, t, alive] {
          if (!alive.expired() && !finished()) runRound(t);
        });
      })) {
    return;
  }
  gate_->wait([this](net::RoundResult&& result) { endRound(std::move(result)); });
}

bool PeerNode::applyLate(std::uint32_t peer, const net::Received& m) {
  if (m.round() >= gate_->openRound() || m.sender() != peer) return false;
  return applyUnmixed(m);
}

bool PeerNode::applyUnmixed(const net::Received& m) {
  const auto taken = exchange_->takeUnmixed(m);
  if (!taken.kept) return false;
  if (taken.applied) conduct_->witness(m, gate_->openRound());
  return true;
}

void PeerNode::askForKeyframe(std::uint32_t peer, std::uint64_t round) {
  exchange_->askForKeyframe(peer, round);
}

std::vector<std::uint32_t> PeerNode::transportPeers() const {
  std::vector<std::uint32_t> peers = neighbours_;
  if (const auto fellows = conduct_->fellows(); !fellows.empty()) {
    for (const std::uint32_t f : fellows) {
      if (!base::containsId(peers, f)) peers.push_back(f);
    }
    std::sort(peers.begin(), peers.end());
  }
  return peers;
}

void PeerNode::applyBroadcast(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                              RoundRecord& record) {
  exchange_->applyBroadcast(t, heard, record);
}

void PeerNode::sendEnvelope(std::uint32_t peer, const net::v1::Envelope& envelope) {
  transport_->send(peer, envelope);
}

net::Transport::Payload PeerNode::wirePayload(std::span<const float> vector) {
  return exchange_->wirePayload(vector);
}

void PeerNode::sendWhole(std::uint32_t peer, std::uint64_t round,
                         const net::Transport::Payload& payload,
                         std::optional<std::uint64_t> sequence) {
  wire_.send(peer, round, exchange_->wholeKind(), payload, 1.0f, sequence, /*own=*/true);
}

std::span<const float> PeerNode::leafOwnVector(std::uint64_t t) {
  return exchange_->leafOwnVector(t);
}

void PeerNode::waitForRound() {
  gate_->wait([this](net::RoundResult&& result) { endRound(std::move(result)); });
}

void PeerNode::finishRound(std::uint64_t t, RoundRecord& record) {
  if (!recordRound(t, record, false)) return;
  clock_.post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.expired()) beginRound();
  });
}

void PeerNode::endRound(net::RoundResult&& result) {
  const std::uint64_t t = result.round;
  RoundRecord record;
  record.round = t;
  record.deadline_hit = result.deadline_hit;
  record.quorum_close = result.closed == net::Close::kQuorum;
  std::vector<std::uint32_t> heard = exchange_->receive(result);
  heard = conduct_->screen(t, heard, result.messages, gate_->openRound());
  for (const auto& m : gate_->takeSkipped()) applyUnmixed(m);  // rounds a catch-up skipped
  for (const std::uint32_t j : neighbours_) {
    if (!base::containsId(heard, j)) {
      record.missing.push_back(j);
      if (base::containsId(result.missing, j)) {
        ++metrics_.deadline_misses_total[j];
      }
    }
  }
  // False: held open (a colluder waiting for its fellows): it finishes the round.
  if (!conduct_->endRound(t, heard, record)) return;
  // An honest model that went NaN/Inf cannot mix again (it is its own pivot): evaluate it
  // once more and stop, so the run records the collapse and the neighbours stop waiting.
  const bool diverged = conduct_->diverged();
  if (diverged) {
    log().error(
        "round {}: the model or its step holds NaN or Inf (diverged: the rule let an attack "
        "through); a last evaluation, then stopping",
        t);
  }
  // The mix goes back to its owner, which may report on it later.
  if (!conduct_->handBack(t, evaluationDue(t, diverged),
                          [this, t, record, diverged, alive = std::weak_ptr<bool>(alive_)] {
                            clock_.post([this, t, record, diverged, alive]() mutable {
                              if (!alive.expired() && !finished()) closeRound(t, record, diverged);
                            });
                          })) {
    return;
  }
  closeRound(t, record, diverged);
}

bool PeerNode::evaluationDue(std::uint64_t t, bool diverged) const {
  const std::uint64_t every = setup_.config.rounds.eval_every;
  return t + 1 >= setup_.rounds || diverged || (every > 0 && (t + 1) % every == 0);
}

void PeerNode::closeRound(std::uint64_t t, RoundRecord& record, bool diverged) {
  if (!recordRound(t, record, diverged)) return;
  // Caught up with neighbours ahead: the rounds skipped are run alone (a local step, nothing
  // heard), so no local step is lost — a catch-up only saves the waiting.
  if (conduct_->stepsAlone()) {
    for (std::uint64_t skipped = t + 1; skipped < gate_->openRound(); ++skipped) {
      RoundRecord alone;
      alone.round = skipped;
      round_started_ = clock_.now();
      conduct_->stepAlone(skipped, alone);
      alone.missing = neighbours_;
      if (!recordRound(skipped, alone, !kernels::allFinite(learner_->parameters()))) return;
    }
  }
  clock_.post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.expired()) beginRound();
  });
}

bool PeerNode::recordRound(std::uint64_t t, RoundRecord& record, bool diverged) {
  if (const auto evaluated = conduct_->evaluation(t, evaluationDue(t, diverged))) {
    const train::Evaluation& e = *evaluated;
    record.test_accuracy = e.accuracy;
    record.test_loss = e.loss;
    record.test_metrics = e.named;
    metrics_.test_accuracy = e.accuracy.value_or(NodeMetrics::kUnknown);
    metrics_.test_loss = e.loss.value_or(NodeMetrics::kUnknown);
    std::string named;
    for (const auto& [name, value] : e.named) named += fmt::format(" {} {:.4f}", name, value);
    log().info("round {}: test_accuracy {:.4f} test_loss {:.4f}{} train_loss {:.4f}", t,
               metrics_.test_accuracy, metrics_.test_loss, named, record.train_loss);
  }
  // Its neighbours convicted so far (a proof may convict a peer further away: not its record).
  record.equivocators.clear();
  for (const std::uint32_t j : conduct_->detector().convictedPeers())
    if (base::containsId(neighbours_, j)) record.equivocators.push_back(j);
  record.round_seconds = net::millisecondsBetween(round_started_, clock_.now()) / 1000;
  metrics_.round = t + 1;
  metrics_.local_steps = exchange_->firstStep(t + 1);
  metrics_.train_loss = record.train_loss;
  metrics_.learning_rate = record.learning_rate;
  metrics_.round_seconds.observe(record.round_seconds);
  refreshMetrics();
  record.bytes_sent_total = metrics_.bytes_sent_total;
  record.bytes_received_total = metrics_.bytes_received_total;
  record.dense_bytes_total = metrics_.dense_bytes_total;
  record.bytes_uplink_total = metrics_.bytes_uplink_total;
  record.bytes_downlink_total = metrics_.bytes_downlink_total;
  if (const auto steps = exchange_->recordedSteps(t)) record.local_steps = *steps;
  // The record goes out before the checkpoint: a kill between the two then replays this round
  // from the previous checkpoint (its line written twice) instead of resuming past a round whose
  // line was never written.
  if (on_round_) on_round_(record);
  const std::uint64_t every = setup_.config.checkpoint.every;
  if (checkpoints_ && every > 0 && (t + 1) % every == 0) saveCheckpoint(t + 1);
  if (finished()) return false;  // on_round_ may have stopped the node
  if (diverged) {
    finish(State::kDiverged);
    return false;
  }
  return true;
}

void PeerNode::refreshMetrics() {
  const net::TransportStats& st = transport_->stats();
  metrics_.bytes_sent_total = 0;
  metrics_.bytes_received_total = 0;
  for (const auto& [_, p] : st.peers) {
    metrics_.bytes_sent_total += p.bytes_sent;
    metrics_.bytes_received_total += p.bytes_received;
  }
  exchange_->countDirected(metrics_);
  std::map<net::Refusal, std::uint64_t> rejected = own_rejections_;
  for (const auto& [reason, n] : st.rejected) rejected[reason] += n;
  const net::InboxCounters& inbox = gate_->inbox().counters();
  metrics_.equivocations_total = conduct_->detector().equivocations();
  metrics_.signatures_checked_total = conduct_->detector().signaturesChecked();
  for (const auto& [refusal, n] : {std::pair{net::Refusal::kStale, inbox.stale},
                                   {net::Refusal::kEquivocation, inbox.equivocation},
                                   {net::Refusal::kTooFarAhead, inbox.too_far_ahead},
                                   {net::Refusal::kUnknownSender, inbox.unknown_sender}}) {
    if (n > 0) rejected[refusal] += n;
  }
  metrics_.messages_rejected_total.clear();
  for (const auto& [refusal, n] : rejected) {
    metrics_.messages_rejected_total[std::string(net::kRefusals.name(refusal))] = n;
  }
  metrics_.live_peers = transport_->livePeers().size();
}

void PeerNode::saveCheckpoint(std::uint64_t next_round) {
  train::Checkpoint c;
  c.round = next_round;
  learner_->save(c);
  exchange_->save(c);
  if (const auto offsets = gate_->deadlineOffsets(); !offsets.empty()) {
    c.putFloats("deadline_offsets_ms", std::vector<float>(offsets.begin(), offsets.end()));
  }
  try {
    checkpoints_->save(c);
  } catch (const train::CheckpointError& e) {
    log().error("round {}: checkpoint not written: {}", next_round, e.what());
  }
}

bool PeerNode::markFinished(State why) {
  if (finished()) return false;
  state_ = why;
  start_timer_->cancel();
  conduct_->stop();
  gate_->cancel();
  learner_->finished();
  return true;
}

void PeerNode::finish(State why) {
  if (!markFinished(why)) return;
  transport_->stop();
  log().info("round {}: finished", gate_->openRound());
  if (on_finish_) on_finish_();
}

void PeerNode::stop() { finish(); }

std::string PeerNode::configDigest() const {
  return node::configDigest(setup_.config, learner_->identity(), dimension());
}

std::expected<void, std::string> PeerNode::switchAttack(const AttackSpec& spec) {
  auto switched = conduct_->switchTo(spec);
  if (!switched) return std::unexpected(switched.error());
  if (*switched) conduct_ = std::move(*switched);
  // The neighbours' replicas of this node now hold something else: start them afresh.
  exchange_->oweKeyframes(neighbours_);
  return {};
}

std::expected<void, std::string> PeerNode::inject(const FaultCommand& command) {
  const auto apply = [this](const auto& f) -> std::expected<void, std::string> {
    using F = std::decay_t<decltype(f)>;
    if constexpr (std::is_same_v<F, fault::Crash>) {
      log().warn("round {}: injected crash", gate_->openRound());
      abort();
    } else if constexpr (std::is_same_v<F, fault::Hang>) {
      log().warn("round {}: injected hang of {} s", gate_->openRound(), f.seconds);
      // Posted, so that the command is answered as applied before the whole node stops.
      clock_.post(
          [v = f.seconds] { std::this_thread::sleep_for(std::chrono::duration<double>(v)); });
    } else if constexpr (std::is_same_v<F, fault::Slow>) {
      slow_ = f.by;
    } else if constexpr (std::is_same_v<F, fault::Delay>) {
      transport_->setDelay(f.by);
    } else if constexpr (std::is_same_v<F, fault::Drop>) {
      transport_->setDrop(f.probability);
    } else if constexpr (std::is_same_v<F, fault::Corrupt>) {
      transport_->setCorrupt(f.probability);
    } else if constexpr (std::is_same_v<F, fault::Partition>) {
      transport_->setPartitioned(f.peers);
    } else if constexpr (std::is_same_v<F, fault::Heal>) {
      slow_ = std::chrono::milliseconds(0);
      transport_->heal();
    } else if constexpr (std::is_same_v<F, fault::SwitchAttack>) {
      return switchAttack(f.attack);
    } else {
      static_assert(std::is_same_v<F, fault::Restart>);
      return std::unexpected(
          "restart: a running node cannot restart itself (the simulation's faults restart a "
          "crashed one; a real one is started again with --resume)");
    }
    return {};
  };
  if (auto applied = std::visit(apply, command); !applied) return applied;
  log().warn("round {}: fault injected: {}", gate_->openRound(), faultText(command));
  return {};
}

void PeerNode::abort() {
  if (!markFinished(State::kFinished)) return;
  transport_->abort();
}

}  // namespace phalanx::node
