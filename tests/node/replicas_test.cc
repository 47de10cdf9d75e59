// CHOCO replicas: sender and receiver stay bit-identical through keyframes and deltas; gaps,
// replays and garbage never corrupt a replica silently.
#include "node/exchange/replicas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace phalanx::node {
namespace {

using Outcome = ReplicaTable::Outcome;

std::unique_ptr<compress::Compressor> topk(double density) {
  compress::CompressorConfig c;
  c.codec = compress::CodecId::kTopk;
  c.density = density;
  return std::move(*compress::makeCompressor(c));
}

std::vector<float> noisy(std::size_t d, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n;
  std::vector<float> v(d);
  for (auto& x : v) x = n(rng);
  return v;
}

TEST(Replicas, ReceiverTracksTheSenderBitForBit) {
  const std::size_t d = 500;
  PublicReplica sender(d);
  ReplicaTable receiver(d);
  auto codec = topk(0.05);
  std::vector<float> y = noisy(d, 1);
  sender.reset(y);
  EXPECT_EQ(receiver.applyKeyframe(7, 1, sender.keyframe()).outcome, Outcome::kApplied);
  for (std::uint64_t seq = 2; seq < 30; ++seq) {
    const auto step = noisy(d, unsigned(seq));
    for (std::size_t i = 0; i < d; ++i) y[i] += 0.1f * step[i];
    auto q = sender.encodeDelta(y, *codec);
    ASSERT_TRUE(q) << q.error();
    ASSERT_EQ(receiver.applyDelta(7, seq, *q).outcome, Outcome::kApplied);
  }
  ASSERT_TRUE(receiver.valid(7));
  const auto r = receiver.replica(7);
  EXPECT_TRUE(std::equal(r.begin(), r.end(), sender.values().begin()));
  EXPECT_EQ(receiver.lastSequence(7), 29u);
  // The replica follows y: CHOCO's contraction closes the distance over the rounds.
  double gap = 0, norm = 0;
  for (std::size_t i = 0; i < d; ++i) {
    gap += std::pow(double(y[i]) - sender.values()[i], 2);
    norm += double(y[i]) * y[i];
  }
  EXPECT_LT(gap, 0.5 * norm);
}

TEST(Replicas, APartialShiftStepByHand) {
  // DIANA's shift (ALGORITHMS.md §3.2): q = C(y - h); the vector heard is h + q; h += s·q.
  // Top-1 of 4: y = (4, 1, -2, 0) from h = 0 keeps 4.
  PublicReplica sender(4);
  ReplicaTable receiver(4);
  auto codec = topk(0.25);
  ASSERT_EQ(receiver.applyKeyframe(3, 1, sender.keyframe()).outcome, Outcome::kApplied);
  auto q = sender.encodeDelta(std::vector<float>{4, 1, -2, 0}, *codec, 0.25f);
  ASSERT_TRUE(q) << q.error();
  EXPECT_EQ(std::vector<float>(sender.published().begin(), sender.published().end()),
            (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(std::vector<float>(sender.values().begin(), sender.values().end()),
            (std::vector<float>{1, 0, 0, 0}));
  ASSERT_EQ(receiver.applyDelta(3, 2, *q, 0.25f).outcome, Outcome::kApplied);
  EXPECT_EQ(std::vector<float>(receiver.replica(3).begin(), receiver.replica(3).end()),
            (std::vector<float>{4, 0, 0, 0}));
  // Next: y - h = (4, 1, -2, 0) - (1, 0, 0, 0) = (3, 1, -2, 0): q keeps 3; heard 1 + 3 = 4.
  // A full step then makes the shift the vector heard.
  q = sender.encodeDelta(std::vector<float>{4, 1, -2, 0}, *codec, 1.0f);
  ASSERT_TRUE(q);
  ASSERT_EQ(receiver.applyDelta(3, 3, *q, 1.0f).outcome, Outcome::kApplied);
  EXPECT_EQ(std::vector<float>(sender.values().begin(), sender.values().end()),
            (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(std::vector<float>(receiver.replica(3).begin(), receiver.replica(3).end()),
            std::vector<float>(sender.published().begin(), sender.published().end()));
  // A step outside (0, 1] is refused and the replica waits for a keyframe.
  q = sender.encodeDelta(std::vector<float>{4, 1, -2, 0}, *codec, 0.5f);
  EXPECT_EQ(receiver.applyDelta(3, 4, *q, 1.5f).outcome, Outcome::kInvalid);
  EXPECT_FALSE(receiver.valid(3));
  ASSERT_EQ(receiver.applyKeyframe(3, 5, sender.keyframe()).outcome, Outcome::kApplied);
  EXPECT_EQ(receiver.applyDelta(3, 6, *q, std::nanf("")).outcome, Outcome::kInvalid);
  EXPECT_EQ(receiver.applyDelta(3, 7, *q, 0.0f).outcome, Outcome::kGap);
}

TEST(Replicas, GapsReplaysAndGarbage) {
  const std::size_t d = 64;
  PublicReplica sender(d);
  ReplicaTable receiver(d);
  auto codec = topk(0.25);
  auto q1 = *sender.encodeDelta(noisy(d, 1), *codec);
  // No keyframe yet: a delta cannot be trusted.
  EXPECT_EQ(receiver.applyDelta(3, 1, q1).outcome, Outcome::kGap);
  EXPECT_FALSE(receiver.valid(3));

  EXPECT_EQ(receiver.applyKeyframe(3, 1, sender.keyframe()).outcome, Outcome::kApplied);
  auto q2 = *sender.encodeDelta(noisy(d, 2), *codec);
  EXPECT_EQ(receiver.applyDelta(3, 2, q2).outcome, Outcome::kApplied);
  const std::vector<float> before(receiver.replica(3).begin(), receiver.replica(3).end());
  EXPECT_EQ(receiver.applyDelta(3, 2, q2).outcome, Outcome::kStale);  // replay: no effect
  EXPECT_TRUE(std::equal(before.begin(), before.end(), receiver.replica(3).begin()));

  auto q3 = *sender.encodeDelta(noisy(d, 3), *codec);
  auto q4 = *sender.encodeDelta(noisy(d, 4), *codec);
  (void)q3;  // lost on the wire
  EXPECT_EQ(receiver.applyDelta(3, 4, q4).outcome, Outcome::kGap);
  EXPECT_FALSE(receiver.valid(3));
  EXPECT_EQ(receiver.applyKeyframe(3, 5, sender.keyframe()).outcome, Outcome::kApplied);
  EXPECT_TRUE(
      std::equal(sender.values().begin(), sender.values().end(), receiver.replica(3).begin()));

  const std::vector<std::uint8_t> garbage{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto bad = receiver.applyDelta(3, 6, garbage);
  EXPECT_EQ(bad.outcome, Outcome::kInvalid);
  EXPECT_FALSE(bad.error.empty());
  EXPECT_FALSE(receiver.valid(3));
  // A keyframe must be exact: a compressed one would leave the two sides apart.
  EXPECT_EQ(receiver.applyKeyframe(3, 7, q4).outcome, Outcome::kInvalid);
  // Wrong dimension.
  PublicReplica other(d + 1);
  EXPECT_EQ(receiver.applyKeyframe(3, 8, other.keyframe()).outcome, Outcome::kInvalid);
  // Reconnection: the next keyframe is needed whatever its sequence.
  EXPECT_EQ(receiver.applyKeyframe(3, 9, sender.keyframe()).outcome, Outcome::kApplied);
  receiver.invalidate(3);
  EXPECT_EQ(receiver.applyKeyframe(3, 1, sender.keyframe()).outcome, Outcome::kApplied);
  EXPECT_TRUE(receiver.valid(3));
  EXPECT_TRUE(receiver.replica(99).empty());
  EXPECT_FALSE(sender.encodeDelta(noisy(d + 1, 1), *codec));
}

}  // namespace
}  // namespace phalanx::node
