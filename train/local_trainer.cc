#include "train/local_trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <numeric>
#include <sstream>

#include "base/check.h"
#include "kernels/vector_ops.h"

namespace phalanx::train {

std::vector<std::size_t> modelSizes(const ModelConfig& model, std::size_t features,
                                    std::size_t classes) {
  std::vector<std::size_t> sizes{features};
  if (model.kind == ModelKind::kMlp)
    sizes.insert(sizes.end(), model.hidden.begin(), model.hidden.end());
  sizes.push_back(classes);
  return sizes;
}

void useThreads(int threads) {
  if (threads <= 0) return;
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
}

Schedule makeSchedule(const TrainerConfig& config) {
  const ScheduleConfig& s = config.optimizer.schedule;
  Schedule out;
  out.kind = s.kind;
  out.lr0 = config.optimizer.lr;
  out.tau = s.tau;
  out.decay_every = s.decay_every;
  out.total_rounds = config.rounds;
  out.min_lr = s.min_lr;
  return out;
}

LocalTrainer::LocalTrainer(const TrainerConfig& config, Dataset shard, std::uint64_t seed)
    : shard_(std::move(shard)),
      model_(modelSizes(config.model, shard_.features, shard_.classes)),
      params_(model_.dimension()),
      grad_(model_.dimension()),
      optimizer_(config.optimizer.momentum_kind, config.optimizer.momentum, model_.dimension()),
      schedule_(makeSchedule(config)),
      weight_decay_(config.optimizer.weight_decay),
      batch_(std::min<std::size_t>(config.data.batch, std::max<std::size_t>(shard_.size(), 1))),
      rng_(seed),
      order_(shard_.size()) {
  if (shard_.size() == 0) throw base::ConfigError("local trainer: this node's data shard is empty");
  identity_ = fmt::format("model={}:{};dataset={};features={};classes={}",
                          kModelKinds.name(config.model.kind), fmt::join(config.model.hidden, ","),
                          kDatasetKinds.name(config.data.dataset), shard_.features, shard_.classes);
  model_.initialize(params_, seed);
  std::iota(order_.begin(), order_.end(), 0u);
  std::shuffle(order_.begin(), order_.end(), rng_);
  batch_y_.resize(batch_);
}

void LocalTrainer::nextBatch(std::vector<float>& x) {
  x.resize(batch_ * shard_.features);
  // Epochs without replacement; a fresh permutation when the current one runs out.
  for (std::size_t i = 0; i < batch_; ++i) {
    if (cursor_ == order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);
      cursor_ = 0;
    }
    const std::uint32_t s = order_[cursor_++];
    const auto row = shard_.row(s);
    std::copy(row.begin(), row.end(), x.begin() + std::ptrdiff_t(i * shard_.features));
    batch_y_[i] = shard_.y[s];
  }
}

double LocalTrainer::gradientInto(std::span<float> grad) {
  // The minibatch is copied out of the shard for each step and read only by it: one buffer per
  // thread, not per peer (a simulation runs thousands of trainers on a few threads).
  thread_local std::vector<float> batch_x;
  nextBatch(batch_x);
  const double loss = model_.lossAndGradient(params_, batch_x, batch_y_, grad);
  if (weight_decay_ > 0) kernels::axpy(float(weight_decay_), params_, grad);
  return loss;
}

double LocalTrainer::gradient() {
  grad_.resize(model_.dimension());
  return gradientInto(grad_);
}

std::span<const float> LocalTrainer::lastGradient() const {
  PHALANX_CHECK(!grad_.empty(), "lastGradient: the last step did not keep its gradient");
  return grad_;
}

void LocalTrainer::keepStepGradient(bool keep) {
  if (keep) {
    grad_.resize(model_.dimension());
  } else {
    std::vector<float>().swap(grad_);  // frees it (`= {}` would keep the capacity)
  }
}

std::vector<compress::LayerShape> LocalTrainer::layers() const {
  std::vector<compress::LayerShape> out;
  for (const auto& layer : model_.layers()) out.push_back({layer.rows, layer.cols});
  return out;
}

void LocalTrainer::applyAggregate(std::uint64_t t, std::span<const float> aggregate) {
  kernels::axpy(-float(learningRate(t)), aggregate, params_);
}

double LocalTrainer::step(std::uint64_t t) {
  if (!grad_.empty()) {  // kept: by default, or once gradient() has needed the buffer anyway
    const double loss = gradient();
    optimizer_.step(grad_, learningRate(t), params_);
    return loss;
  }
  thread_local std::vector<float> grad;
  grad.resize(model_.dimension());
  const double loss = gradientInto(grad);
  optimizer_.step(grad, learningRate(t), params_);
  return loss;
}

void LocalTrainer::save(Checkpoint& c) const {
  c.putFloats("trainer.parameters", params_);
  c.putFloats("trainer.momentum", optimizer_.momentum());
  std::vector<std::uint64_t> order(order_.begin(), order_.end());
  order.push_back(cursor_);
  c.putU64s("trainer.order", order);
  std::ostringstream rng;
  rng << rng_;
  const std::string text = rng.str();
  c.sections["trainer.rng"].assign(text.begin(), text.end());
}

void LocalTrainer::restore(const Checkpoint& c) {
  const auto params = c.floats("trainer.parameters");
  const auto momentum = c.floats("trainer.momentum");
  const auto order = c.u64s("trainer.order");
  if (params.size() != params_.size() || momentum.size() != params_.size()) {
    throw CheckpointError("checkpoint: trainer state is for a model of another size");
  }
  if (order.size() != order_.size() + 1 || order.back() > order_.size()) {
    throw CheckpointError("checkpoint: trainer state is for a data shard of another size");
  }
  if (!c.has("trainer.rng")) throw CheckpointError("checkpoint: no section trainer.rng");
  const auto& rng_bytes = c.sections.at("trainer.rng");
  std::istringstream rng(std::string(rng_bytes.begin(), rng_bytes.end()));
  std::mt19937_64 restored;
  if (!(rng >> restored)) throw CheckpointError("checkpoint: trainer.rng does not parse");
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    if (order[i] >= order_.size()) throw CheckpointError("checkpoint: trainer.order out of range");
    order_[i] = std::uint32_t(order[i]);
  }
  cursor_ = std::size_t(order.back());
  rng_ = restored;
  std::copy(params.begin(), params.end(), params_.begin());
  std::copy(momentum.begin(), momentum.end(), optimizer_.momentum().begin());
}

}  // namespace phalanx::train
