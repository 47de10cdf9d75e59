#include "node/peer_node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "compress/decode.h"
#include "kernels/vector_ops.h"
#include "net/tcp_transport.h"
#include "node/json.h"
#include "topologies/analysis.h"

namespace phalanx::node {
namespace {

using Clock = net::Clock;

bool contains(const std::vector<std::uint32_t>& ids, std::uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

PeerNode::PeerNode(asio::io_context& io, PeerSetup setup)
    : PeerNode(nullptr, &io, std::move(setup), {}) {}

PeerNode::PeerNode(net::Clock& clock, PeerSetup setup, TransportMaker make_transport)
    : PeerNode(&clock, nullptr, std::move(setup), std::move(make_transport)) {}

PeerNode::PeerNode(net::Clock* clock, asio::io_context* io, PeerSetup setup,
                   TransportMaker make_transport)
    : own_clock_(clock ? nullptr : std::make_unique<net::AsioClock>(*io)),
      clock_(clock ? *clock : *own_clock_),
      setup_(std::move(setup)),
      log_(setup_.log ? setup_.log : spdlog::default_logger()),
      rounds_(setup_.rounds ? setup_.rounds : setup_.config.rounds.count),
      neighbours_(neighboursOf(setup_)),
      learner_(learnerFor(setup_, attackFor(setup_))),
      wire_(setup_.id, learner_->dimension(), metrics_),
      exchange_(makeExchange(buildExchange(setup_, *learner_, *log_),
                             ExchangeContext{setup_.id, setup_.config, neighbours_, *learner_,
                                             wire_, *log_, metrics_, own_rejections_})),
      aggregator_(aggregatorFor(setup_)),
      adversary_(adversaryFor(setup_, *this)),
      equivocation_(setup_.topology->budgetOf(setup_.id)),
      join_timer_(clock_.timer()),
      slow_timer_(clock_.timer()),
      hold_timer_(clock_.timer()) {
  metrics_.node = setup_.id;
  wire_.setLie([this](const net::v1::RoundMessage& header) {
    return adversary_ ? adversary_->lieAbout(header) : std::nullopt;
  });
  const Resumed resumed = setup_.checkpoint_dir.empty() ? Resumed{} : restoreCheckpoint();
  const net::TransportConfig tc =
      transportConfig(setup_, dimension(), configDigest(), transportPeers());
  if (!make_transport) {
    make_transport = [io](net::TransportConfig config, net::TransportHandlers handlers) {
      return std::make_unique<net::TcpTransport>(*io, std::move(config), std::move(handlers));
    };
  }
  transport_ = std::make_unique<net::FaultyTransport>(
      clock_, transportHandlers(),
      [&](net::TransportHandlers handlers) { return make_transport(tc, std::move(handlers)); },
      setup_.config.seed * 104729 + setup_.id);
  wire_.attach(*transport_);
  awaited_ = awaitedOf(neighbours_, adversary_.get());
  gate_ =
      std::make_unique<net::RoundGate>(clock_, *transport_, awaited_,
                                       gateConfig(setup_, role() == Role::kHonest, awaited_.size(),
                                                  exchange_->hubSide() == HubSide::kLeaf, rounds_),
                                       resumed.round);
  // A resumed node paces its rounds by the arrivals it had learned, not by the ceiling until it
  // has seen 8 more: alone (its neighbours gone, or finished), it would wait the ceiling each
  // round.
  gate_->restoreDeadline(resumed.deadline_offsets);
}

PeerNode::Resumed PeerNode::restoreCheckpoint() {
  checkpoints_ = std::make_unique<CheckpointStore>(setup_.checkpoint_dir);
  if (!setup_.resume) return {};
  auto loaded = checkpoints_->loadLatest();
  for (const auto& why : loaded.skipped) log_->warn("checkpoint skipped: {}", why);
  if (!loaded.checkpoint) {
    log_->warn("--resume: no usable checkpoint in {}; starting at round 0",
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
  log_->info("resumed from {} at round {}", loaded.file.string(), resumed.round);
  return resumed;
}

net::TransportHandlers PeerNode::transportHandlers() {
  return net::TransportHandlers{
      .on_round =
          [this](std::uint32_t peer, net::v1::RoundMessage& m) {
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
      .on_digest = [this](std::uint32_t peer,
                          const net::v1::RoundDigest& d) { takeDigest(peer, d); },
      .on_coalition =
          [this](std::uint32_t peer, const net::v1::Coalition& c) {
            // From a neighbour that is no fellow (honest peers have none): garbage.
            if (!adversary_ || !adversary_->takeCoalition(peer, c))
              ++own_rejections_[net::Refusal::kCoalition];
          },
      .on_up =
          [this](std::uint32_t peer) {
            // A new connection: whatever was in flight on the old one is lost, so both replicas
            // of this edge restart from keyframes.
            exchange_->connected(peer);
            log_->info("round {}: peer {} connected", gate_->openRound(), peer);
          },
      .on_down =
          [this](std::uint32_t peer, std::string_view why) {
            log_->info("round {}: peer {} disconnected: {}", gate_->openRound(), peer, why);
            gate_->poke();
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
  log_->info(
      "round {}: starting as {} ({} parameters, {} neighbours, rule {}, codec {}, {} rounds)",
      gate_->openRound(), adversary_ ? "byzantine: " + adversary_->spec().name() : "honest",
      dimension(), neighbours_.size(), robust::kRules.name(setup_.config.mixing.rule),
      compress::codecName(setup_.config.compression.codec), rounds_);
  waitForNeighbours(clock_.now());
}

void PeerNode::waitForNeighbours(Clock::TimePoint since) {
  if (finished_) return;
  // Everyone connected, and every awaited neighbour heard from once (its round is known).
  const auto live = transport_->livePeers();
  const bool everyone = std::all_of(neighbours_.begin(), neighbours_.end(),
                                    [&](std::uint32_t j) { return contains(live, j); }) &&
                        std::all_of(awaited_.begin(), awaited_.end(),
                                    [&](std::uint32_t j) { return gate_->knowsRoundOf(j); });
  if (!everyone && clock_.now() - since < setup_.join_timeout) {
    join_timer_->start(std::chrono::milliseconds(20), [this, since] { waitForNeighbours(since); });
    return;
  }
  // A late joiner (or a restart) adopts the round most of its neighbours are in.
  const std::uint64_t own = gate_->openRound();
  if (gate_->catchUp()) {
    log_->info("round {}: joining the neighbours at round {}", own, gate_->openRound());
    for (const auto& m : gate_->takeSkipped()) applyUnmixed(m);
  }
  beginRound();
}

void PeerNode::beginRound() {
  if (finished_) return;
  const std::uint64_t t = gate_->openRound();
  if (t >= rounds_) {
    finish();
    return;
  }
  if (adversary_ && adversary_->holdsRound(t)) {
    hold_timer_->start(std::chrono::milliseconds(2), [this] { beginRound(); });
    return;
  }
  transport_->setRound(adversary_ ? adversary_->announcedRound(t) : t);
  round_started_ = clock_.now();
  // An injected slow peer starts every round late; a staller, just before the neighbours'
  // deadline ceiling.
  // The computation's virtual time is the honest step's (an attacker's vector costs little);
  // an outer round computes H of them.
  const std::chrono::microseconds late =
      (role() == Role::kHonest ? setup_.compute_time * std::int64_t(exchange_->stepsPerRound())
                               : std::chrono::microseconds(0)) +
      slow_ + (adversary_ ? adversary_->startDelay() : std::chrono::microseconds(0));
  if (late.count() > 0) {
    slow_timer_->start(late, [this, t] {
      if (!finished_) runRound(t);
    });
    return;
  }
  runRound(t);
}

void PeerNode::runRound(std::uint64_t t) {
  // A learner fed from another thread (a training script) may not have round t's vector yet:
  // the round resumes on this clock when it comes. The neighbours meanwhile hear this round
  // announced in the heartbeats and wait up to their deadline.
  if (role() == Role::kHonest && !learner_->ready([this, t, alive = std::weak_ptr<bool>(alive_)] {
        clock_.post([this, t, alive] {
          if (!alive.expired() && !finished_) runRound(t);
        });
      })) {
    return;
  }
  if (role() == Role::kHonest)
    last_loss_ = exchange_->send(t, adversary_ && adversary_->spamsKeyframes());
  if (adversary_ && adversary_->startRound(t)) return;
  gate_->wait([this](net::RoundResult&& result) { endRound(std::move(result)); });
}

bool PeerNode::applyLate(std::uint32_t peer, const net::v1::RoundMessage& m) {
  if (m.round() >= gate_->openRound() || m.sender() != peer) return false;
  return applyUnmixed(m);
}

bool PeerNode::applyUnmixed(const net::v1::RoundMessage& m) {
  const auto taken = exchange_->takeUnmixed(m);
  if (!taken.kept) return false;
  if (taken.applied && role() == Role::kHonest) {
    // The replica now holds the sender's vector for that round: evidence like any other.
    const std::uint32_t peer = m.sender();
    const std::uint64_t h = vectorDigest(exchange_->refreshedRow(peer));
    if (equivocation_.own(m.round(), peer, h)) logConviction(peer, m.round());
    net::v1::Envelope envelope;
    envelope.mutable_digest()->set_round(m.round());
    envelope.mutable_digest()->add_senders(peer);
    envelope.mutable_digest()->add_hashes(h);
    for (const std::uint32_t j : transport_->livePeers()) transport_->send(j, envelope);
  }
  return true;
}

std::vector<std::uint32_t> PeerNode::screenEquivocators(std::uint64_t t,
                                                        const std::vector<std::uint32_t>& heard) {
  equivocation_.advance(t);
  net::v1::Envelope envelope;
  net::v1::RoundDigest& digest = *envelope.mutable_digest();
  digest.set_round(t);
  for (const std::uint32_t j : heard) {
    const std::uint64_t h = vectorDigest(rowOf(j));
    digest.add_senders(j);
    digest.add_hashes(h);
    if (equivocation_.own(t, j, h)) logConviction(j, t);
  }
  if (!heard.empty()) {
    for (const std::uint32_t j : transport_->livePeers()) transport_->send(j, envelope);
  }
  std::vector<std::uint32_t> kept;
  for (const std::uint32_t j : heard) {
    if (!equivocation_.convicted(j) || !setup_.config.mixing.exclude_equivocators)
      kept.push_back(j);
  }
  return kept;
}

void PeerNode::takeDigest(std::uint32_t reporter, const net::v1::RoundDigest& d) {
  if (role() != Role::kHonest) return;
  for (int k = 0; k < d.senders_size(); ++k) {
    const std::uint32_t sender = d.senders(k);
    if (sender == setup_.id || sender == reporter || !contains(neighbours_, sender)) continue;
    if (equivocation_.report(reporter, d.round(), sender, d.hashes(k)))
      logConviction(sender, d.round());
  }
}

void PeerNode::logConviction(std::uint32_t peer, std::uint64_t round) {
  log_->warn(
      "round {}: peer {} equivocated: more than {} neighbours hold a different vector from it for "
      "round {}; leaving it out of every later mix",
      gate_->openRound(), peer, setup_.topology->budgetOf(setup_.id), round);
}

void PeerNode::askForKeyframe(std::uint32_t peer, std::uint64_t round) {
  exchange_->askForKeyframe(peer, round);
}

std::vector<std::uint32_t> PeerNode::transportPeers() const {
  std::vector<std::uint32_t> peers = neighbours_;
  if (const auto fellows = adversary_ ? adversary_->fellows() : std::vector<std::uint32_t>();
      !fellows.empty()) {
    for (const std::uint32_t f : fellows) {
      if (!contains(peers, f)) peers.push_back(f);
    }
    std::sort(peers.begin(), peers.end());
  }
  return peers;
}

void PeerNode::mix(std::uint64_t t, const std::vector<std::uint32_t>& heard, RoundRecord& record) {
  if (!exchange_->mixes()) {
    applyBroadcast(t, heard, record);
    return;
  }
  std::vector<std::span<const float>> rows{exchange_->pivot()};
  std::vector<double> weights{0.0};
  for (const std::uint32_t j : heard) {
    rows.push_back(exchange_->rowOf(j));
    weights.push_back(topologies::metropolisWeight(*setup_.topology, setup_.id, j));
  }
  mix_out_.resize(dimension());
  const robust::MixInput in{
      .rows = rows, .byzantine_budget = setup_.topology->budgetOf(setup_.id), .weights = weights};
  auto report = aggregator_->mix(in, mix_out_);
  if (!report) {
    ++metrics_.mix_errors_total;
    log_->warn("round {}: mix failed ({}); keeping the local half step", t, report.error());
    return;
  }
  exchange_->apply(t, mix_out_, record);
  for (std::size_t k = 1; k < rows.size(); ++k) {
    const std::uint32_t j = heard[k - 1];
    record.mixed.push_back(j);
    ++metrics_.peer_heard_total[j];
    metrics_.peer_distance[j] = report->distance[k];
    if (!report->kept[k]) {
      record.excluded.push_back(j);
      ++metrics_.peer_excluded_total[j];
    }
  }
}

void PeerNode::applyBroadcast(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                              RoundRecord& record) {
  // Out of step with the others from here on (the hub resends nothing): said, not hidden.
  if (!exchange_->applyBroadcast(t, heard, record) && role() == Role::kHonest)
    log_->warn("round {}: no usable update from the hub; this model did not step", t);
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
  wire_.send(peer, round, exchange_->wholeKind(), payload, 1.0f, sequence);
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
  // (In hub mode no leaf hears another: no digest could corroborate anything.)
  if (role() == Role::kHonest && !exchange_->hubSide()) heard = screenEquivocators(t, heard);
  for (const auto& m : gate_->takeSkipped()) applyUnmixed(m);  // rounds a catch-up skipped
  for (const std::uint32_t j : neighbours_) {
    if (!contains(heard, j)) {
      record.missing.push_back(j);
      if (contains(result.missing, j)) {
        ++metrics_.deadline_misses_total[j];
      }
    }
  }
  if (role() == Role::kHonest) {
    mix(t, heard, record);
    if (adversary_) adversary_->afterHonestMix(t);
    record.train_loss = last_loss_;
    record.learning_rate = learner_->learningRate(exchange_->firstStep(t));
  } else if (adversary_->endRound(t, heard, record)) {
    return;  // held open (a colluder waiting for its fellows): it finishes the round
  }
  // An honest model that went NaN/Inf cannot mix again (it is its own pivot): evaluate it
  // once more and stop, so the run records the collapse and the neighbours stop waiting.
  const bool diverged = role() == Role::kHonest &&
                        (exchange_->sentNonFinite() || !kernels::allFinite(learner_->parameters()));
  if (diverged) {
    log_->error(
        "round {}: the model or its step holds NaN or Inf (diverged: the rule let an attack "
        "through); a last evaluation, then stopping",
        t);
  }
  if (role() == Role::kHonest) {
    // The mix goes back to its owner; one that evaluates itself reports on an evaluation
    // round before it hands in its next vector, so waiting for the report costs the round
    // nothing.
    learner_->roundDone(t, evaluationDue(t, diverged));
    if (!learner_->evaluated([this, t, record, diverged, alive = std::weak_ptr<bool>(alive_)] {
          clock_.post([this, t, record, diverged, alive]() mutable {
            if (!alive.expired() && !finished_) closeRound(t, record, diverged);
          });
        })) {
      return;
    }
  }
  closeRound(t, record, diverged);
}

bool PeerNode::evaluationDue(std::uint64_t t, bool diverged) const {
  const std::uint64_t every = setup_.config.rounds.eval_every;
  return t + 1 >= rounds_ || diverged || (every > 0 && (t + 1) % every == 0);
}

void PeerNode::closeRound(std::uint64_t t, RoundRecord& record, bool diverged) {
  if (!recordRound(t, record, diverged)) return;
  // Caught up with neighbours ahead: the rounds skipped are run alone (a local step, nothing
  // heard), so no local step is lost — a catch-up only saves the waiting.
  if (role() == Role::kHonest && exchange_->stepsAlone() && learner_->canStepAlone()) {
    for (std::uint64_t skipped = t + 1; skipped < gate_->openRound(); ++skipped) {
      RoundRecord alone;
      alone.round = skipped;
      round_started_ = clock_.now();
      last_loss_ = exchange_->stepAlone(skipped);
      alone.train_loss = last_loss_;
      alone.learning_rate = learner_->learningRate(skipped);
      alone.missing = neighbours_;
      if (!recordRound(skipped, alone, !kernels::allFinite(learner_->parameters()))) return;
    }
  }
  clock_.post([this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.expired()) beginRound();
  });
}

bool PeerNode::recordRound(std::uint64_t t, RoundRecord& record, bool diverged) {
  // A Byzantine node's round passes its learner's vector over (an external loop is paced by it).
  if (role() != Role::kHonest) learner_->roundDone(t, false);
  if (const auto evaluated =
          role() == Role::kHonest
              ? learner_->evaluation(setup_.test.get(), evaluationDue(t, diverged))
              : std::nullopt) {
    const Evaluation& e = *evaluated;
    record.test_accuracy = e.accuracy;
    record.test_loss = e.loss;
    metrics_.test_accuracy = e.accuracy;
    metrics_.test_loss = e.loss;
    log_->info("round {}: test_accuracy {:.4f} test_loss {:.4f} train_loss {:.4f}", t, e.accuracy,
               e.loss, last_loss_);
  }
  const auto& caught = equivocation_.convictedPeers();
  record.equivocators.assign(caught.begin(), caught.end());
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
  if (finished_) return false;  // on_round_ may have stopped the node
  if (diverged) {
    diverged_ = true;
    finish();
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
  if (const auto side = exchange_->hubSide()) {
    (*side == HubSide::kHub ? metrics_.bytes_downlink_total : metrics_.bytes_uplink_total) =
        metrics_.bytes_sent_total;
  }
  std::map<net::Refusal, std::uint64_t> rejected = own_rejections_;
  for (const auto& [reason, n] : st.rejected) rejected[reason] += n;
  const net::InboxCounters& inbox = gate_->inbox().counters();
  metrics_.equivocations_total = equivocation_.equivocations();
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
  Checkpoint c;
  c.round = next_round;
  learner_->save(c);
  exchange_->save(c);
  if (const auto offsets = gate_->deadlineOffsets(); !offsets.empty()) {
    c.putFloats("deadline_offsets_ms", std::vector<float>(offsets.begin(), offsets.end()));
  }
  try {
    checkpoints_->save(c);
  } catch (const CheckpointError& e) {
    log_->error("round {}: checkpoint not written: {}", next_round, e.what());
  }
}

bool PeerNode::markFinished() {
  if (finished_) return false;
  finished_ = true;
  join_timer_->cancel();
  slow_timer_->cancel();
  hold_timer_->cancel();
  if (adversary_) adversary_->stop();
  gate_->cancel();
  learner_->finished();
  return true;
}

void PeerNode::finish() {
  if (!markFinished()) return;
  transport_->stop();
  log_->info("round {}: finished", gate_->openRound());
  if (on_finish_) on_finish_();
}

void PeerNode::stop() { finish(); }

std::string PeerNode::configDigest() const {
  return node::configDigest(setup_.config, learner_->identity(), dimension());
}

std::expected<void, std::string> PeerNode::switchAttack(const AttackSpec& spec) {
  if (!adversary_ && !spec.honest()) {
    auto made = turnedByzantine(setup_, *this);
    if (auto switched = made->switchTo(spec); !switched) return switched;
    adversary_ = std::move(made);
  } else if (adversary_) {
    if (auto switched = adversary_->switchTo(spec); !switched) return switched;
  }
  // The neighbours' replicas of this node now hold something else: start them afresh.
  exchange_->oweKeyframes(neighbours_);
  return {};
}

std::expected<void, std::string> PeerNode::inject(const FaultCommand& command) {
  const auto apply = [this](const auto& f) -> std::expected<void, std::string> {
    using F = std::decay_t<decltype(f)>;
    if constexpr (std::is_same_v<F, fault::Crash>) {
      log_->warn("round {}: injected crash", gate_->openRound());
      abort();
    } else if constexpr (std::is_same_v<F, fault::Hang>) {
      log_->warn("round {}: injected hang of {} s", gate_->openRound(), f.seconds);
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
  log_->warn("round {}: fault injected: {}", gate_->openRound(), faultText(command));
  return {};
}

void PeerNode::abort() {
  if (!markFinished()) return;
  transport_->abort();
}

}  // namespace phalanx::node
