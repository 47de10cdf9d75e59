// One peer's local learning (ALGORITHMS.md §1): its data shard, the model, the flat parameter
// vector, momentum and schedule. step() computes the half step y = x - lr_t * m in place; the
// network round loop mixes on top of it (as its Learner), and `phalanx train` uses it alone.
// Not thread-safe; one per node.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/dataset.h"
#include "train/learner.h"
#include "train/mlp.h"
#include "train/optimizer.h"
#include "train/train_config.h"

namespace phalanx::train {

// {features, hidden..., classes} for config.model ("softmax" has no hidden layer).
std::vector<std::size_t> modelSizes(const ModelConfig& model, std::size_t features,
                                    std::size_t classes);

// Sets the threads OpenMP and Eigen use (the config's `threads`); 0 leaves their defaults (every
// core).
void useThreads(int threads);

// The schedule config.optimizer asks for; cosine's period is config.rounds.
Schedule makeSchedule(const TrainerConfig& config);

class LocalTrainer final : public Learner {
 public:
  // `seed` drives the initial parameters and the minibatch order. Throws base::ConfigError if the
  // shard is empty.
  LocalTrainer(const TrainerConfig& config, Dataset shard, std::uint64_t seed);

  std::size_t dimension() const override { return model_.dimension(); }
  std::vector<compress::LayerShape> layers() const override;
  // The model's kind and sizes and the dataset's.
  std::string identity() const override { return identity_; }

  // Round t: g = grad loss(x; minibatch) + wd * x; momentum; x <- x - lr_t * m.
  // Returns the minibatch's mean cross-entropy (before the step).
  double step(std::uint64_t t) override;

  // Gradient exchange: the next minibatch's g = grad loss(x) + wd * x into lastGradient(),
  // parameters and momentum untouched. Returns the minibatch's mean cross-entropy.
  double gradient();
  double gradient(std::uint64_t) override { return gradient(); }
  // g of the last gradient(), or of the last step() while the step keeps it (the default).
  std::span<const float> lastGradient() const override;
  // Whether step() keeps its gradient for lastGradient() (Accordion reads it after the step).
  // Without it (until a gradient() call needs the buffer again) the step's gradient is
  // per-thread scratch: one model-sized vector less a peer, which is what lets a simulation hold
  // 10,000 of them.
  void keepStepGradient(bool keep);
  // x -= lr_t * G: the aggregate is the step's direction, with no further momentum.
  void applyAggregate(std::uint64_t t, std::span<const float> aggregate) override;
  // The epoch (full passes over the shard) that round t's minibatch belongs to.
  std::uint64_t epochOf(std::uint64_t t) const override { return t * batch_ / shard_.size(); }
  std::uint64_t roundsPerEpoch() const override {
    return std::max<std::uint64_t>(1, shard_.size() / batch_);
  }

  double learningRate(std::uint64_t t) const override { return train::learningRate(schedule_, t); }
  Evaluation evaluate(const Dataset& data) const { return model_.evaluate(params_, data); }
  std::optional<Evaluation> evaluation(const Dataset* test, bool due) override {
    if (!test || !due) return std::nullopt;
    return evaluate(*test);
  }

  // Parameters, momentum, minibatch order and RNG as checkpoint sections "trainer.*"; restore
  // throws CheckpointError when a section is missing or sized for another model or shard.
  void save(Checkpoint& c) const override;
  void restore(const Checkpoint& c) override;

  std::span<float> parameters() override { return params_; }
  std::span<const float> parameters() const override { return params_; }
  const Mlp& model() const { return model_; }
  const Dataset& shard() const { return shard_; }
  std::size_t batchSize() const { return batch_; }

 private:
  // The next minibatch's rows into `x` (batch_ rows) and labels into batch_y_.
  void nextBatch(std::vector<float>& x);
  // g of the next minibatch into `grad`.
  double gradientInto(std::span<float> grad);

  Dataset shard_;
  Mlp model_;
  std::vector<float> params_;
  // The last step's or gradient()'s g; empty (freed) while steps do not keep theirs and
  // gradient() was not called since, and then steps use per-thread scratch.
  std::vector<float> grad_;
  MomentumOptimizer optimizer_;
  Schedule schedule_;
  double weight_decay_;
  std::size_t batch_;
  std::mt19937_64 rng_;
  std::vector<std::uint32_t> order_;  // this epoch's sample order
  std::size_t cursor_ = 0;
  std::vector<std::uint8_t> batch_y_;
  std::string identity_;
};

}  // namespace phalanx::train
