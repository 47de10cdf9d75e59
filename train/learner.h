// What a PeerNode's round needs from whoever owns the model: the honest vector of a round (the
// half step, or the gradient) and a place for the mix. LocalTrainer (train/local_trainer.h) owns
// an Eigen MLP and its data; ExternalLearner (train/external_learner.h) takes the vectors from a
// training loop on another thread (the Python package: python/). Called on the node's clock only,
// except where a method says otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "train/checkpoint.h"
#include "train/dataset.h"
#include "train/mlp.h"

namespace phalanx::train {

class Learner {
 public:
  virtual ~Learner() = default;

  // The vector length, its layers (per-layer codecs and Accordion) and the part of the config
  // digest that says what model this is (peers with different models must not connect).
  virtual std::size_t dimension() const = 0;
  virtual std::vector<compress::LayerShape> layers() const = 0;
  virtual std::string identity() const = 0;

  // Whether round t's vector can be computed now. When not, `wake` runs once it can (from any
  // thread: the caller must hand it to its clock). A local trainer is always ready.
  virtual bool ready(std::function<void()> wake) {
    (void)wake;
    return true;
  }
  // Model exchange: round t's half step y into parameters(). Returns the minibatch loss (NaN:
  // unknown).
  virtual double step(std::uint64_t t) = 0;
  // Gradient exchange: round t's gradient into lastGradient(); parameters untouched.
  virtual double gradient(std::uint64_t t) = 0;
  virtual std::span<const float> lastGradient() const = 0;
  // Gradient exchange: applies the round's robust aggregate G (a local trainer: x -= lr_t G).
  virtual void applyAggregate(std::uint64_t t, std::span<const float> aggregate) = 0;
  // The round's mix is in parameters() (or applied by applyAggregate): the round is over.
  // `evaluation_due`: the round is an evaluation round (every rounds.eval_every, the last).
  virtual void roundDone(std::uint64_t t, bool evaluation_due) {
    (void)t;
    (void)evaluation_due;
  }
  // Whether the round's record can be written: an external loop evaluates the mixed model
  // itself, and the record waits for its report (it stops owing one when it hands in its next
  // vector or stops). When not, `wake` runs once it can (any thread, like ready()'s).
  virtual bool evaluated(std::function<void()> wake) {
    (void)wake;
    return true;
  }
  // No more rounds (finished, stopped or diverged).
  virtual void finished() {}

  virtual std::span<float> parameters() = 0;
  virtual std::span<const float> parameters() const = 0;
  // NaN where the learner has no schedule of its own.
  virtual double learningRate(std::uint64_t t) const = 0;
  // The epoch round t belongs to (DGC's warm-up) and the rounds of one epoch (Accordion).
  virtual std::uint64_t epochOf(std::uint64_t t) const = 0;
  virtual std::uint64_t roundsPerEpoch() const = 0;
  // Rounds skipped by a catch-up can be run alone (local steps with nothing heard).
  virtual bool canStepAlone() const { return true; }

  // On the evaluation rounds: accuracy and loss on `test` (null: none given). A learner whose
  // owner evaluates reports what it measured since the last call, whatever the round.
  virtual std::optional<Evaluation> evaluation(const Dataset* test, bool due) = 0;

  // Checkpoint sections of the learner's own state ("trainer.*"); restore throws
  // CheckpointError when one is missing or sized for another model.
  virtual void save(Checkpoint& c) const = 0;
  virtual void restore(const Checkpoint& c) = 0;
};

}  // namespace phalanx::train
