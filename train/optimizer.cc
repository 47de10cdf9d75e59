#include "train/optimizer.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "base/check.h"
#include "kernels/vector_ops.h"

namespace phalanx::train {

double learningRate(const Schedule& s, std::uint64_t t) {
  switch (s.kind) {
    case ScheduleKind::kConstant:
      return s.lr0;
    case ScheduleKind::kHyperbolic: {
      const std::uint64_t every = s.decay_every == 0 ? 1 : s.decay_every;
      const double stepped = double((t / every) * every);
      return s.lr0 / (stepped / s.tau + 1.0);
    }
    case ScheduleKind::kCosine: {
      const double period = double(s.total_rounds == 0 ? 1 : s.total_rounds);
      const double progress = std::min(double(t), period) / period;
      return s.min_lr + (s.lr0 - s.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  return s.lr0;
}

MomentumOptimizer::MomentumOptimizer(MomentumKind kind, double beta, std::size_t dimension)
    : kind_(kind), beta_(float(beta)), momentum_(dimension, 0.0f) {
  if (!(beta >= 0 && beta < 1)) throw std::invalid_argument("momentum beta must be in [0, 1)");
}

void MomentumOptimizer::step(std::span<const float> gradient, double lr, std::span<float> x) {
  PHALANX_CHECK(gradient.size() == momentum_.size() && x.size() == momentum_.size(),
                "optimizer: size mismatch");
  const float g_weight = kind_ == MomentumKind::kEma ? 1.0f - beta_ : 1.0f;
  kernels::axpby(g_weight, gradient, beta_, momentum_);
  kernels::axpy(-float(lr), momentum_, x);
}

}  // namespace phalanx::train
