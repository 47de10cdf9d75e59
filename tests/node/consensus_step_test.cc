// gamma: auto (ALGORITHMS.md §3.3): the averaged contraction, the residual back-off by hand, and
// the checkpoint section.
#include "node/exchange/consensus_step.h"

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
  // Rising residual (models leaving their common start), then high: never a back-off.
  feed(s, {1, 2, 4, 8, 16});
  feed(s, std::vector<double>(60, 16.0));
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.step(std::nullopt), double(0.4f));
  // Falling to 4: the average of the logs (weight 0.05) passes 0.9 of its peak and the back-off
  // arms; 80 rounds bring it to 4.09.
  feed(s, std::vector<double>(80, 4.0));
  EXPECT_EQ(s.scale(), 1.0f);
  // A climb to 5.8 is under 1.5x that low: no back-off...
  feed(s, std::vector<double>(100, 5.8));
  EXPECT_EQ(s.scale(), 1.0f);
  // ...one to 6.5 is over it: the step halves once, and the low starts over from there.
  feed(s, std::vector<double>(100, 6.5));
  EXPECT_EQ(s.scale(), 0.5f);
  EXPECT_NEAR(s.step(std::nullopt), 0.2, 1e-6);
  // Growing on, 5 % a round: halvings down to a sixteenth, never below.
  double r = 6.5;
  for (int i = 0; i < 200; ++i) s.observe(0.4, r *= 1.05);
  EXPECT_EQ(s.scale(), 1.0f / 16);
  EXPECT_NEAR(s.step(std::nullopt), 0.025, 1e-6);
}

TEST(AutoConsensusStep, AFallingOrNoisyResidualNeverBacksOff) {
  double r = 1;
  AutoConsensusStep falling;
  for (int i = 0; i < 20; ++i) falling.observe(0.3, r *= 1.2);
  // The learning rate decays: the residual follows it down, 1.5x and 0.5x of that by turns (what
  // an attacked or near-exact codec's residual looks like: the round's own movement).
  for (int i = 0; i < 1000; ++i) falling.observe(0.3, (r *= 0.995) * (i % 2 == 0 ? 1.5 : 0.5));
  EXPECT_EQ(falling.scale(), 1.0f);
  AutoConsensusStep steady;  // flat, with a spike of 3x every 7th round
  for (int i = 0; i < 20; ++i) steady.observe(0.3, 1.0 + i);
  for (int i = 0; i < 1000; ++i) steady.observe(0.3, i % 7 == 0 ? 30.0 : 10.0);
  EXPECT_EQ(steady.scale(), 1.0f);
}

TEST(AutoConsensusStep, ACodecChangeWatchesTheResidualAfresh) {
  // Accordion moves from top-10 % to top-1 %: the residual jumps tenfold by design.
  AutoConsensusStep s;
  feed(s, {1, 3, 5});
  feed(s, std::vector<double>(60, 1.0));  // armed, low about 1
  AutoConsensusStep changed = s;
  changed.codecChanged();
  feed(s, std::vector<double>(5, 10.0));
  feed(changed, std::vector<double>(5, 10.0));
  EXPECT_LT(s.scale(), 1.0f) << "unwarned, the jump reads as growth";
  EXPECT_EQ(changed.scale(), 1.0f);
  EXPECT_EQ(changed.step(std::nullopt), s.step(std::nullopt) / double(s.scale()))
      << "the contraction average stays";
  // Watched afresh: a fall arms it, and a later climb backs off as before.
  feed(changed, std::vector<double>(60, 5.0));
  feed(changed, std::vector<double>(60, 10.0));
  EXPECT_EQ(changed.scale(), 0.5f);
}

TEST(AutoConsensusStep, ACheckpointCarriesTheStateExactly) {
  AutoConsensusStep a;
  feed(a, {1, 3, 5});
  feed(a, std::vector<double>(60, 1.0));
  feed(a, std::vector<double>(60, 4.0));
  ASSERT_EQ(a.scale(), 0.125f) << "armed on the fall to 1, halved three times on the climb to 4";
  train::Checkpoint c;
  a.save(c);
  AutoConsensusStep b;
  b.restore(train::parseCheckpoint(train::serializeCheckpoint(c)));
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.step(std::nullopt), a.step(std::nullopt));
  for (int i = 0; i < 10; ++i) {
    for (const double r : {4.0, 5.0, 6.5, 8.0, 9.0, 12.0}) {
      a.observe(0.35, r);
      b.observe(0.35, r);
      EXPECT_EQ(b.step(std::nullopt), a.step(std::nullopt)) << r;
      EXPECT_EQ(b.scale(), a.scale()) << r;
    }
  }
  EXPECT_EQ(b.scale(), 1.0f / 16) << "and a fourth time, the same round in both";
}

TEST(AutoConsensusStep, AMalformedOrOldSectionStartsOverOrKeepsTheContraction) {
  AutoConsensusStep s;
  train::Checkpoint bad;
  bad.putFloats("consensus_step", std::vector<float>{0.3f, 1, 1, 1, 4.0f});  // scale 4: not ours
  s.restore(bad);
  EXPECT_EQ(s.scale(), 1.0f);
  bad.putFloats("consensus_step", std::vector<float>{0.3f, 1, 1, 1});  // too short
  s.restore(bad);
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.step(std::nullopt), 1e-3);
  train::Checkpoint old;  // before the back-off only the average contraction was kept
  old.putFloats("consensus_contraction", std::vector<float>{0.25f});
  s.restore(old);
  EXPECT_EQ(s.step(std::nullopt), 0.25);
  s.restore(train::Checkpoint{});
  EXPECT_EQ(s.step(std::nullopt), 1e-3);
}

}  // namespace
}  // namespace phalanx::node
