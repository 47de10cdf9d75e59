#include "node/honest_round.h"

#include "kernels/vector_ops.h"

namespace phalanx::node {

HonestRound::HonestRound(const PeerSetup& setup, const std::vector<std::uint32_t>& neighbours,
                         train::Learner& learner, RoundExchange& exchange, RoundWire& wire,
                         NodeMetrics& metrics, std::map<net::Refusal, std::uint64_t>& rejections,
                         spdlog::logger& log)
    : setup_(setup),
      learner_(learner),
      exchange_(exchange),
      metrics_(metrics),
      log_(log),
      mix_(aggregatorFor(setup), *setup.topology, setup.id, learner.dimension(),
           setup.config.mixing.weights, declaredByzantine(setup)),
      digests_({.self = setup.id,
                .neighbours = neighbours,
                .topology = *setup.topology,
                .keys = setup.signing_key ? setup.keys : nullptr,
                .domain = configDigest(setup.config, learner.identity(), learner.dimension()),
                .exclude = setup.config.mixing.exclude_equivocators,
                .memo = setup.digest_memo.get(),
                .detours = setup.detours},
               wire, metrics, rejections, log) {}

std::chrono::microseconds HonestRound::computeTime() const {
  return setup_.compute_time * std::int64_t(exchange_.stepsPerRound());
}

bool HonestRound::send(std::uint64_t t, std::function<void()> resume, bool keyframes) {
  // A learner fed from another thread (a training script) may not have round t's vector yet.
  if (!learner_.ready(std::move(resume))) return false;
  last_loss_ = exchange_.send(t, keyframes);
  return true;
}

std::vector<std::uint32_t> HonestRound::screen(std::uint64_t t,
                                               const std::vector<std::uint32_t>& heard,
                                               const net::RoundMessages& messages,
                                               std::uint64_t open) {
  if (!exchange_.corroborates()) return heard;
  return digests_.screen(t, heard, messages, exchange_, open);
}

void HonestRound::mix(std::uint64_t t, const std::vector<std::uint32_t>& heard,
                      RoundRecord& record) {
  if (!exchange_.mixes()) {
    // Out of step with the others from here on (the hub resends nothing): said, not hidden.
    if (!exchange_.applyBroadcast(t, heard, record))
      log_.warn("round {}: no usable update from the hub; this model did not step", t);
  } else if (auto mixed = mix_.run(t, exchange_, heard, record, metrics_); !mixed) {
    ++metrics_.mix_errors_total;
    log_.warn("round {}: mix failed ({}); keeping the local half step", t, mixed.error());
  }
  record.train_loss = last_loss_;
  record.learning_rate = learner_.learningRate(exchange_.firstStep(t));
}

bool HonestRound::diverged() const {
  return exchange_.sentNonFinite() || !kernels::allFinite(learner_.parameters());
}

bool HonestRound::handBack(std::uint64_t t, bool evaluation_due, std::function<void()> resume) {
  // One that evaluates itself reports on an evaluation round before it hands in its next
  // vector, so waiting for the report costs the round nothing.
  learner_.roundDone(t, evaluation_due);
  return learner_.evaluated(std::move(resume));
}

std::optional<train::Evaluation> HonestRound::evaluation(bool due) {
  return learner_.evaluation(setup_.test.get(), due);
}

void HonestRound::passOver(std::uint64_t t) { learner_.roundDone(t, false); }

bool HonestRound::stepsAlone() const { return exchange_.stepsAlone() && learner_.canStepAlone(); }

void HonestRound::stepAlone(std::uint64_t round, RoundRecord& record) {
  last_loss_ = exchange_.stepAlone(round);
  record.train_loss = last_loss_;
  record.learning_rate = learner_.learningRate(round);
}

void HonestRound::takeDigest(std::uint32_t peer, const net::v1::RoundDigest& digest,
                             std::uint64_t open) {
  digests_.take(peer, digest, open);
}

void HonestRound::witness(const net::Received& m, std::uint64_t open) {
  // The replica now holds the sender's vector for that round: evidence like any other.
  exchange_.refreshedRow(m.sender());
  digests_.witness(m, exchange_.statementRow(m.sender()), open);
}

}  // namespace phalanx::node
