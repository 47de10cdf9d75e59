// The outer loop of `exchange: outer` (ALGORITHMS.md §3.7: DiLoCo, Douillard et al. 2023, with
// robust gossip instead of an all-reduce): a round is `steps` local momentum-SGD steps from
// x_start; the pseudo-gradient Δ = x_start − x goes out (compressed, with error feedback, by the
// node's GradientFeedback); the rule mixes the neighbours' Δ with the node's own as pivot into
// D; and the outer optimizer steps from x_start:
//   v = μ·v + D;   x = x_start − η·(D + μ·v)   (Nesterov)   or   x = x_start − η·v.
// Owned by one node; called from its round thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "node/config.h"
#include "train/checkpoint.h"

namespace phalanx::node {

class OuterLoop {
 public:
  OuterLoop(const OuterConfig& config, std::size_t dim);

  std::uint64_t steps() const { return config_.steps; }
  // The local step index of round t's first local step (schedules run in local steps).
  std::uint64_t firstStep(std::uint64_t round) const { return round * config_.steps; }

  // Round start: remembers x.
  void begin(std::span<const float> x);
  // After the local steps: Δ = x_start − x.
  std::span<const float> pseudoGradient(std::span<const float> x);
  // The outer step with the mixed pseudo-gradient D, from x_start into x.
  void apply(std::span<const float> mixed, std::span<float> x);

  std::span<const float> momentum() const { return momentum_; }

  // Section "outer.momentum" (x_start is not needed: checkpoints fall between rounds).
  void save(train::Checkpoint& c) const;
  void restore(const train::Checkpoint& c);

 private:
  OuterConfig config_;
  std::vector<float> start_, delta_, momentum_;
};

}  // namespace phalanx::node
