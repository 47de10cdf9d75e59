// The Learner of a node whose model lives elsewhere: a training loop on another thread (the
// Python package, python/) hands in each round's vector — its half-step model, or its gradient —
// and blocks until the node has gossiped and mixed it; the mix comes back in the same buffer.
// The loop owns its data, optimizer, evaluation and their checkpoints; the node keeps the
// network, compression, robust mixing, faults and metrics. One vector in flight at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "train/learner.h"

namespace phalanx::train {

class ExternalLearner final : public Learner {
 public:
  // `layers` (sizes summing to `dimension`; empty: one layer) for per-layer codecs. Throws
  // base::ConfigError on a zero dimension or layers of another total.
  explicit ExternalLearner(std::size_t dimension, std::vector<compress::LayerShape> layers = {});

  // The loop's side (any thread).
  enum class Answer {
    kMixed,     // the mix of the vector handed in replaced it
    kPassed,    // the node ran its round without it (a Byzantine role: it sends its attack)
    kFinished,  // the node stopped (rounds done, stopped, diverged) before using it
    kPending,   // not yet (the wait ran out)
  };
  // Hands in the next round's vector and the loss measured with it (NaN: unknown). The buffer
  // is not copied: it is the node's until an answer other than kPending (the node reads the
  // vector there and writes the mix back there) or withdraw(). Throws std::invalid_argument on
  // a wrong length or while an earlier vector is still in flight; returns kFinished when the
  // node has stopped (nothing handed in).
  Answer submit(std::span<float> vector, double loss);
  // Waits up to `limit` for the answer to the vector in flight; on kMixed the mix is in the
  // buffer handed in.
  Answer await(std::chrono::milliseconds limit);
  // The loop stops waiting before the answer (an exception in it): the buffer is its own again.
  // The node keeps a copy of the vector for a round that has not taken it yet; the answer is
  // then written nowhere the loop can see.
  void withdraw();
  // The loop's own evaluation of the mix it got back, recorded with that round when the round
  // is an evaluation round (the node holds the record until the report, the next vector or a
  // stop), else with the next one.
  void report(Evaluation e);
  // The last mix came back on an evaluation round and neither a report nor a vector has
  // followed yet.
  bool evaluationDue() const;
  bool stopped() const;
  // The last round whose mix came back, and how many did.
  std::uint64_t roundsMixed() const;

  // The node's side (its clock).
  std::size_t dimension() const override { return dimension_; }
  std::vector<compress::LayerShape> layers() const override { return layers_; }
  std::string identity() const override { return "model=external"; }
  bool ready(std::function<void()> wake) override;
  double step(std::uint64_t t) override;
  double gradient(std::uint64_t t) override;
  std::span<const float> lastGradient() const override { return gradient_; }
  void applyAggregate(std::uint64_t t, std::span<const float> aggregate) override;
  void roundDone(std::uint64_t t, bool evaluation_due) override;
  bool evaluated(std::function<void()> wake) override;
  void finished() override;
  std::span<float> parameters() override { return params_; }
  std::span<const float> parameters() const override { return params_; }
  double learningRate(std::uint64_t) const override;
  // The loop has no epochs the node can see: every round counts as one (DGC's warm-up then
  // follows compression.warmup_every).
  std::uint64_t epochOf(std::uint64_t t) const override { return t; }
  std::uint64_t roundsPerEpoch() const override { return 1; }
  bool canStepAlone() const override { return false; }
  std::optional<Evaluation> evaluation(const Dataset* test, bool due) override;
  // The loop checkpoints its own model and optimizer; the node's replicas go in its sections.
  void save(Checkpoint&) const override {}
  void restore(const Checkpoint&) override {}

 private:
  // Copies the vector in flight into `into` (the one copy in); its loss.
  double take(std::vector<float>& into);

  const std::size_t dimension_;
  std::vector<compress::LayerShape> layers_;
  // The node's copies (its clock only): the round's vector, then its mix.
  std::vector<float> params_, gradient_;

  mutable std::mutex mutex_;
  std::condition_variable answered_cv_;
  // The loop's buffer while a vector is in flight; once withdrawn, inbox_ (a copy of the
  // vector the node had not taken yet) or nothing (it had).
  std::span<float> caller_;
  std::vector<float> inbox_;
  double loss_ = 0;  // the vector's loss
  // A vector is in flight from submit() until its answer; taken_ once the node has it.
  bool in_flight_ = false, taken_ = false, stopped_ = false;
  bool evaluation_due_ = false;
  Answer last_answer_ = Answer::kPending;
  std::uint64_t rounds_mixed_ = 0;
  std::function<void()> wake_;            // ready()'s: a vector came
  std::function<void()> evaluated_wake_;  // evaluated()'s: the loop reported or moved on
  std::optional<Evaluation> reported_;
};

}  // namespace phalanx::train
