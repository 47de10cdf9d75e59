#include "train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace phalanx::train {
namespace {

TEST(Schedule, ConstantIsConstant) {
  const Schedule s{ScheduleKind::kConstant, 0.3};
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.3);
  EXPECT_DOUBLE_EQ(learningRate(s, 100000), 0.3);
}

TEST(Schedule, HyperbolicFollowsMonnaStepwise) {
  // lr_t = lr0 / (floor(t / every) * every / tau + 1), lr0 = 0.75, tau = 50, every = 50.
  Schedule s{ScheduleKind::kHyperbolic, 0.75, 50, 50};
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.75);
  EXPECT_DOUBLE_EQ(learningRate(s, 49), 0.75);
  EXPECT_DOUBLE_EQ(learningRate(s, 50), 0.375);
  EXPECT_DOUBLE_EQ(learningRate(s, 99), 0.375);
  EXPECT_DOUBLE_EQ(learningRate(s, 100), 0.25);
  EXPECT_DOUBLE_EQ(learningRate(s, 599), 0.75 / 12.0);
  s.tau = 100;
  s.decay_every = 10;
  EXPECT_DOUBLE_EQ(learningRate(s, 25), 0.75 / 1.2);
}

TEST(Schedule, CosineGoesFromLr0ToMinLr) {
  const Schedule s{ScheduleKind::kCosine, 1.0, 50, 50, 100, 0.1};
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 1.0);
  EXPECT_NEAR(learningRate(s, 50), 0.55, 1e-12);
  EXPECT_NEAR(learningRate(s, 25), 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4)), 1e-12);
  EXPECT_NEAR(learningRate(s, 100), 0.1, 1e-12);
  EXPECT_NEAR(learningRate(s, 1000), 0.1, 1e-12);  // clamped past the period
}

TEST(Momentum, EmaMatchesHandComputedSequence) {
  // beta = 0.5; g1 = 2, g2 = 4. m1 = 0.5*0 + 0.5*2 = 1; x1 = 10 - 0.1*1 = 9.9.
  // m2 = 0.5*1 + 0.5*4 = 2.5; x2 = 9.9 - 0.1*2.5 = 9.65.
  MomentumOptimizer opt(MomentumKind::kEma, 0.5, 1);
  std::vector<float> x{10.0f};
  opt.step(std::vector<float>{2.0f}, 0.1, x);
  EXPECT_FLOAT_EQ(opt.momentum()[0], 1.0f);
  EXPECT_FLOAT_EQ(x[0], 9.9f);
  opt.step(std::vector<float>{4.0f}, 0.1, x);
  EXPECT_FLOAT_EQ(opt.momentum()[0], 2.5f);
  EXPECT_FLOAT_EQ(x[0], 9.65f);
}

TEST(Momentum, HeavyBallMatchesHandComputedSequence) {
  // beta = 0.5; m1 = 2, x1 = 10 - 0.2 = 9.8; m2 = 1 + 4 = 5, x2 = 9.8 - 0.5 = 9.3.
  MomentumOptimizer opt(MomentumKind::kHeavyBall, 0.5, 1);
  std::vector<float> x{10.0f};
  opt.step(std::vector<float>{2.0f}, 0.1, x);
  EXPECT_FLOAT_EQ(x[0], 9.8f);
  opt.step(std::vector<float>{4.0f}, 0.1, x);
  EXPECT_FLOAT_EQ(opt.momentum()[0], 5.0f);
  EXPECT_FLOAT_EQ(x[0], 9.3f);
}

TEST(Momentum, BetaZeroIsPlainSgd) {
  MomentumOptimizer opt(MomentumKind::kEma, 0.0, 2);
  std::vector<float> x{1.0f, -1.0f};
  opt.step(std::vector<float>{1.0f, 2.0f}, 0.5, x);
  EXPECT_EQ(x, (std::vector<float>{0.5f, -2.0f}));
}

TEST(Momentum, ConventionsDifferByOneOverOneMinusBeta) {
  // A constant gradient: heavy-ball's momentum tends to g/(1-beta), EMA's to g.
  MomentumOptimizer ema(MomentumKind::kEma, 0.9, 1), hb(MomentumKind::kHeavyBall, 0.9, 1);
  std::vector<float> x1{0}, x2{0};
  for (int i = 0; i < 400; ++i) {
    ema.step(std::vector<float>{1.0f}, 0.0, x1);
    hb.step(std::vector<float>{1.0f}, 0.0, x2);
  }
  EXPECT_NEAR(ema.momentum()[0], 1.0f, 1e-4);
  EXPECT_NEAR(hb.momentum()[0], 10.0f, 1e-3);
}

TEST(Momentum, RejectsBetaOutsideRange) {
  EXPECT_THROW(MomentumOptimizer(MomentumKind::kEma, 1.0, 1), std::invalid_argument);
  EXPECT_THROW(MomentumOptimizer(MomentumKind::kEma, -0.1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace phalanx::train
