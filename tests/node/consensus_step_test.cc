// gamma: auto (ALGORITHMS.md §3.3): the averaged contraction, the residual back-off by hand, and
// the checkpoint section.
#include "node/consensus_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace phalanx::node {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(AutoConsensusStep, AveragesTheContractionInFloatWithTheRoundIncluded) {
  AutoConsensusStep s;
  EXPECT_EQ(s.step(std::nullopt), 1e-3) << "nothing measured yet: the floor";
  s.observe(0.5, kNaN);
  EXPECT_EQ(s.step(std::nullopt), 0.5);
  s.observe(0.3, kNaN);  // 0.5 + 0.1·(0.3 − 0.5)
  EXPECT_EQ(s.step(std::nullopt), double(0.5f + 0.1f * (0.3f - 0.5f)));
  s.observe(kNaN, kNaN);  // nothing measured: unchanged
  EXPECT_EQ(s.step(std::nullopt), double(0.5f + 0.1f * (0.3f - 0.5f)));
  EXPECT_DOUBLE_EQ(s.step(1.5), 0.4) << "an unbiased codec (ω = 1.5): capped at 1/(1 + ω)";
  s.observe(7.0, kNaN);  // a contraction above 1 counts as 1
  EXPECT_EQ(s.step(std::nullopt), double(0.48f + 0.1f * (1.0f - 0.48f)));
}

// Feeds one residual per round with a constant contraction of 0.4.
void feed(AutoConsensusStep& s, const std::vector<double>& residuals) {
  for (const double r : residuals) s.observe(0.4, r);
}

TEST(AutoConsensusStep, HalvesWhenTheResidualClimbsBackOverItsLow) {
  AutoConsensusStep s;
  // Rising residual (models leaving their common start): never a back-off, however steep.
  feed(s, {1, 2, 4, 8, 16});
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.step(std::nullopt), double(0.4f));
  // Falling: the smoothed residual (weight 0.2) passes 0.9 of its peak and the back-off arms.
  feed(s, std::vector<double>(20, 4.0));
  EXPECT_EQ(s.scale(), 1.0f);
  // Holding steady at 4 (the low, 4.02 smoothed): a rise to 5.8 is under 1.5x, no back-off...
  feed(s, std::vector<double>(30, 5.8));
  EXPECT_EQ(s.scale(), 1.0f);
  // ...one to 6.5 is over it: the step halves once, and the low starts over from there.
  feed(s, std::vector<double>(30, 6.5));
  EXPECT_EQ(s.scale(), 0.5f);
  EXPECT_NEAR(s.step(std::nullopt), 0.2, 1e-6);
  // Growing on, ten times: halvings down to a sixteenth, never below.
  double r = 6.5;
  for (int i = 0; i < 200; ++i) s.observe(0.4, r *= 1.05);
  EXPECT_EQ(s.scale(), 1.0f / 16);
  EXPECT_NEAR(s.step(std::nullopt), 0.025, 1e-6);
}

TEST(AutoConsensusStep, AFallingResidualNeverBacksOff) {
  AutoConsensusStep s;
  double r = 1;
  for (int i = 0; i < 20; ++i) s.observe(0.3, r *= 1.2);
  // The learning rate decays: the residual follows it down, with noise of ±20 % around that.
  for (int i = 0; i < 500; ++i) s.observe(0.3, (r *= 0.995) * (i % 2 == 0 ? 1.2 : 0.8));
  EXPECT_EQ(s.scale(), 1.0f);
}

TEST(AutoConsensusStep, ACheckpointCarriesTheStateExactly) {
  AutoConsensusStep a;
  feed(a, {1, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4, 4});
  ASSERT_EQ(a.scale(), 0.25f) << "armed on the fall, halved twice on the climb to 4";
  Checkpoint c;
  a.save(c);
  AutoConsensusStep b;
  b.restore(parseCheckpoint(serializeCheckpoint(c)));
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.step(std::nullopt), a.step(std::nullopt));
  for (const double r : {4.0, 5.0, 6.5, 8.0, 9.0, 12.0}) {
    a.observe(0.35, r);
    b.observe(0.35, r);
    EXPECT_EQ(b.step(std::nullopt), a.step(std::nullopt)) << r;
    EXPECT_EQ(b.scale(), a.scale()) << r;
  }
  EXPECT_EQ(b.scale(), 0.125f) << "and a third time, the same round in both";
}

TEST(AutoConsensusStep, AMalformedOrOldSectionStartsOverOrKeepsTheContraction) {
  AutoConsensusStep s;
  Checkpoint bad;
  bad.putFloats("consensus_step", std::vector<float>{0.3f, 1, 1, 1, 4.0f});  // scale 4: not ours
  s.restore(bad);
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.step(std::nullopt), 1e-3);
  Checkpoint old;  // before the back-off only the average contraction was kept
  old.putFloats("consensus_contraction", std::vector<float>{0.25f});
  s.restore(old);
  EXPECT_EQ(s.step(std::nullopt), 0.25);
  s.restore(Checkpoint{});
  EXPECT_EQ(s.step(std::nullopt), 1e-3);
}

}  // namespace
}  // namespace phalanx::node
