// The local step of ALGORITHMS.md §1: Polyak momentum (EMA or heavy-ball) and the learning
// rate schedules (constant, MoNNA's hyperbolic decay, cosine). Owns the momentum buffer.
// Not thread-safe; one per node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/names.h"

namespace phalanx::train {

enum class MomentumKind : std::uint8_t {
  kEma,        // m = beta*m + (1-beta)*g   (MoNNA)
  kHeavyBall,  // m = beta*m + g            (ClippedGossip); lr differs by 1/(1-beta)
};
inline constexpr auto kMomentumKinds = base::nameTable<MomentumKind>(
    {{MomentumKind::kEma, "ema"}, {MomentumKind::kHeavyBall, "heavy_ball"}});

enum class ScheduleKind : std::uint8_t { kConstant, kHyperbolic, kCosine };
inline constexpr auto kScheduleKinds =
    base::nameTable<ScheduleKind>({{ScheduleKind::kConstant, "constant"},
                                   {ScheduleKind::kHyperbolic, "hyperbolic"},
                                   {ScheduleKind::kCosine, "cosine"}});

struct Schedule {
  ScheduleKind kind = ScheduleKind::kConstant;
  double lr0 = 0.1;
  double tau = 50;  // hyperbolic: lr0 / (floor(t/every)*every/tau + 1)
  std::uint64_t decay_every = 50;
  std::uint64_t total_rounds = 1;  // cosine: period
  double min_lr = 0;               // cosine: floor
};

// lr_t for round t (0-based).
double learningRate(const Schedule& s, std::uint64_t t);

class MomentumOptimizer {
 public:
  MomentumOptimizer(MomentumKind kind, double beta, std::size_t dimension);

  // m <- momentum(m, g); x <- x - lr * m. After the call x holds the half step y.
  void step(std::span<const float> gradient, double lr, std::span<float> x);

  std::span<const float> momentum() const { return momentum_; }
  std::span<float> momentum() { return momentum_; }  // checkpoint restore

 private:
  MomentumKind kind_;
  float beta_;
  std::vector<float> momentum_;  // m0 = 0
};

}  // namespace phalanx::train
