#include "node/exchange/outer_loop.h"

#include <fmt/format.h>

namespace phalanx::node {

OuterLoop::OuterLoop(const OuterConfig& config, std::size_t dim)
    : config_(config), start_(dim, 0.0f), delta_(dim, 0.0f), momentum_(dim, 0.0f) {}

void OuterLoop::begin(std::span<const float> x) { start_.assign(x.begin(), x.end()); }

std::span<const float> OuterLoop::pseudoGradient(std::span<const float> x) {
  for (std::size_t i = 0; i < delta_.size(); ++i) delta_[i] = start_[i] - x[i];
  return delta_;
}

void OuterLoop::apply(std::span<const float> mixed, std::span<float> x) {
  const float mu = float(config_.momentum), eta = float(config_.lr);
  for (std::size_t i = 0; i < x.size(); ++i) {
    momentum_[i] = mu * momentum_[i] + mixed[i];
    const float step = config_.nesterov ? mixed[i] + mu * momentum_[i] : momentum_[i];
    x[i] = start_[i] - eta * step;
  }
}

void OuterLoop::save(train::Checkpoint& c) const { c.putFloats("outer.momentum", momentum_); }

void OuterLoop::restore(const train::Checkpoint& c) {
  std::vector<float> v = c.floats("outer.momentum");
  if (v.size() != momentum_.size()) {
    throw train::CheckpointError(fmt::format(
        "checkpoint: outer.momentum has {} values for a model of {}", v.size(), momentum_.size()));
  }
  momentum_ = std::move(v);
}

}  // namespace phalanx::node
