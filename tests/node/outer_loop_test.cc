// The outer loop (ALGORITHMS.md §3.7): the outer Nesterov step by hand on a tiny problem (two
// peers, H = 3 local steps), error feedback carried across outer rounds by the pseudo-gradient's
// GradientFeedback, and a checkpoint that continues with the same bytes on the wire.
#include "node/exchange/outer_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "compress/decode.h"
#include "node/exchange/gradient_feedback.h"

namespace phalanx::node {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

std::vector<float> copy(std::span<const float> v) { return {v.begin(), v.end()}; }

// Plain gradient descent on f_i(x) = ½‖x − c_i‖² with step 0.5, H times: x ← x − 0.5(x − c_i).
void localSteps(std::vector<float>& x, const std::vector<float>& c, int h) {
  for (int k = 0; k < h; ++k) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] -= 0.5f * (x[i] - c[i]);
  }
}

TEST(OuterLoop, NesterovOuterStepByHandWithTwoPeers) {
  const OuterConfig config{.steps = 3, .lr = 0.5, .momentum = 0.5, .nesterov = true};
  const std::vector<float> c0{8, 0}, c1{0, 16};
  std::vector<float> x0{0, 0}, x1{0, 0};
  OuterLoop a(config, 2), b(config, 2);
  // Round 1. Three halvings of the distance to c: x = c·(1 − 1/8), so Δ = −(7/8)·c.
  a.begin(x0);
  b.begin(x1);
  localSteps(x0, c0, 3);
  localSteps(x1, c1, 3);
  EXPECT_THAT(copy(a.pseudoGradient(x0)), ElementsAre(-7, 0));
  EXPECT_THAT(copy(b.pseudoGradient(x1)), ElementsAre(0, -14));
  // The mix (the mean here): D = (−3.5, −7); v = D; x = 0 − 0.5·(D + 0.5·v) = (2.625, 5.25).
  const std::vector<float> d{-3.5f, -7};
  a.apply(d, x0);
  b.apply(d, x1);
  EXPECT_THAT(x0, ElementsAre(2.625, 5.25));
  EXPECT_EQ(x0, x1);
  EXPECT_THAT(copy(a.momentum()), ElementsAre(-3.5, -7));
  // Round 2 from (2.625, 5.25): after 3 steps x = c + (x − c)/8.
  a.begin(x0);
  b.begin(x1);
  localSteps(x0, c0, 3);
  localSteps(x1, c1, 3);
  // Δ0 = (x − c0)·7/8 = (−4.703125, 4.59375); Δ1 = (x − c1)·7/8 = (2.296875, −9.40625).
  EXPECT_THAT(copy(a.pseudoGradient(x0)), Pointwise(FloatNear(1e-6), {-4.703125f, 4.59375f}));
  EXPECT_THAT(copy(b.pseudoGradient(x1)), Pointwise(FloatNear(1e-6), {2.296875f, -9.40625f}));
  const std::vector<float> d2{-1.203125f, -2.40625f};
  a.apply(d2, x0);
  // v = 0.5·(−3.5, −7) + D2 = (−2.953125, −5.90625); x = start − 0.5·(D2 + 0.5·v)
  //   = (2.625 + 0.6015625 + 0.73828125, 5.25 + 1.203125 + 1.4765625).
  EXPECT_THAT(copy(a.momentum()), Pointwise(FloatNear(1e-6), {-2.953125f, -5.90625f}));
  EXPECT_THAT(x0, Pointwise(FloatNear(1e-5), {3.96484375f, 7.9296875f}));
}

TEST(OuterLoop, WithoutNesterovTheStepIsTheMomentum) {
  OuterLoop o({.steps = 1, .lr = 2, .momentum = 0.5, .nesterov = false}, 1);
  std::vector<float> x{1};
  o.begin(x);
  o.apply(std::vector<float>{1}, x);  // v = 1; x = 1 − 2·1
  EXPECT_THAT(x, ElementsAre(-1));
  o.begin(x);
  o.apply(std::vector<float>{1}, x);  // v = 1.5; x = −1 − 3
  EXPECT_THAT(x, ElementsAre(-4));
}

Config outerConfig() {
  Config c;
  c.exchange = Exchange::kOuter;
  c.optimizer.momentum = 0.9;  // the inner optimizer's: not applied to the pseudo-gradient
  c.compression.codec = compress::CodecId::kTopk;
  c.compression.density = 0.25;  // top-1 of 4
  c.compression.feedback = compress::FeedbackKind::kEf14;
  return c;
}

std::unique_ptr<compress::Compressor> topOne() {
  compress::CompressorConfig k{.codec = compress::CodecId::kTopk, .density = 0.25};
  k.layers = {{4, 1}};
  return std::move(*compress::makeCompressor(k));
}

TEST(OuterLoop, ErrorFeedbackCarriesThePseudoGradientAcrossRounds) {
  // The pseudo-gradient goes out as it is (no inner momentum on it) through EF14: what top-1
  // leaves out of Δ₁ is added to Δ₂.
  GradientFeedback ex(outerConfig(), 4, {{4, 1}}, 2, topOne());
  ASSERT_TRUE(ex.encode(std::vector<float>{3, -1, 2, 0}, 0));
  EXPECT_THAT(copy(ex.own()), ElementsAre(3, 0, 0, 0));
  // e = (0, −1, 2, 0); Δ₂ + e = (1, 0.5, 3, 1) − keeps the 3 that round 1 left out and added to.
  ASSERT_TRUE(ex.encode(std::vector<float>{1, 1.5, 1, 1}, 0));
  EXPECT_THAT(copy(ex.own()), ElementsAre(0, 0, 3, 0));
}

TEST(OuterLoop, CheckpointContinuesWithTheSameBytesOnTheWire) {
  const Config c = outerConfig();
  OuterLoop a(c.outer, 4), b(c.outer, 4);
  GradientFeedback ea(c, 4, {{4, 1}}, 2, topOne()), eb(c, 4, {{4, 1}}, 2, topOne());
  std::vector<float> x{1, 2, 3, 4};
  a.begin(x);
  std::vector<float> after{0.5f, 2.5f, 2, 4.25f};
  ASSERT_TRUE(ea.encode(a.pseudoGradient(after), 0));
  a.apply(ea.own(), x);
  train::Checkpoint saved;
  a.save(saved);
  ea.save(saved);
  b.restore(saved);
  eb.restore(saved);
  // The next round from the same model on both: the same message, the same outer step.
  std::vector<float> y = x;
  a.begin(x);
  b.begin(y);
  const std::vector<float> moved{x[0] - 1, x[1] + 0.25f, x[2], x[3] - 0.5f};
  const auto qa = ea.encode(a.pseudoGradient(moved), 1);
  const auto qb = eb.encode(b.pseudoGradient(moved), 1);
  ASSERT_TRUE(qa && qb);
  EXPECT_EQ(*qa, *qb);
  a.apply(ea.own(), x);
  b.apply(eb.own(), y);
  EXPECT_EQ(x, y);
  train::Checkpoint wrong;
  wrong.putFloats("outer.momentum", std::vector<float>(3));
  EXPECT_THROW(b.restore(wrong), train::CheckpointError);
}

}  // namespace
}  // namespace phalanx::node
