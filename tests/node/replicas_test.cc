// CHOCO replicas: sender and receiver stay bit-identical through keyframes and deltas; gaps,
// replays and garbage never corrupt a replica silently.
#include "node/exchange/replicas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compress/decode.h"

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
  EXPECT_EQ(
      receiver.applyKeyframe(3, 7, std::make_shared<const std::vector<std::uint8_t>>(q4)).outcome,
      Outcome::kInvalid);
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

// A dense keyframe is read where it lies: every receiver of it shares the sender's buffer, and
// the sender's next move copies it first instead of writing under its receivers.
TEST(Replicas, DenseKeyframesAreSharedAndCopiedOnlyOnWrite) {
  const std::size_t d = 64;
  PublicReplica sender(d);
  const std::vector<float> y = noisy(d, 3);
  sender.reset(y);
  const net::Payload frame = sender.keyframe();
  ReplicaTable a(d), b(d);
  ASSERT_EQ(a.applyKeyframe(1, 1, frame).outcome, Outcome::kApplied);
  ASSERT_EQ(b.applyKeyframe(1, 1, frame).outcome, Outcome::kApplied);
  EXPECT_EQ(a.replica(1).data(), b.replica(1).data());  // one copy of the vector
  EXPECT_EQ(static_cast<const void*>(a.replica(1).data()),
            static_cast<const void*>(frame->data() + compress::kHeaderBytes));
  EXPECT_EQ(std::vector<float>(a.replica(1).begin(), a.replica(1).end()), y);
  EXPECT_EQ(sender.publishedOwner(), frame);

  // The sender moves on while its receivers hold the old frame: theirs stays as it was.
  const std::vector<float> z = noisy(d, 4);
  sender.reset(z);
  EXPECT_NE(sender.keyframe(), frame);
  EXPECT_EQ(std::vector<float>(a.replica(1).begin(), a.replica(1).end()), y);
  EXPECT_EQ(std::vector<float>(sender.values().begin(), sender.values().end()), z);
  auto codec = topk(0.25);
  ASSERT_TRUE(sender.encodeDelta(noisy(d, 5), *codec));
  EXPECT_EQ(std::vector<float>(b.replica(1).begin(), b.replica(1).end()), y);

  // A delta gives the receiver values of its own, starting from the shared ones.
  const std::vector<float> before(sender.values().begin(), sender.values().end());
  ReplicaTable c(d);
  ASSERT_EQ(c.applyKeyframe(2, 1, sender.keyframe()).outcome, Outcome::kApplied);
  auto q = sender.encodeDelta(noisy(d, 6), *codec);
  ASSERT_TRUE(q);
  ASSERT_EQ(c.applyDelta(2, 2, *q).outcome, Outcome::kApplied);
  EXPECT_NE(c.replica(2).data(), reinterpret_cast<const float*>(sender.keyframe()->data() + 8));
  EXPECT_TRUE(std::equal(sender.values().begin(), sender.values().end(), c.replica(2).begin()));
  EXPECT_NE(std::vector<float>(sender.values().begin(), sender.values().end()), before);
}

// The in-place view makes every check decode makes: a non-finite value, a wrong length, a
// compressed message or trailing bytes are refused (and then decoded, which says why).
TEST(Replicas, DenseViewChecksWhatDecodeChecks) {
  const std::vector<float> v{1.0f, -2.0f, 3.5f};
  const std::vector<std::uint8_t> good = encodeDense(v);
  const auto view = compress::viewDense(good, 3);
  ASSERT_TRUE(view);
  EXPECT_EQ(std::vector<float>(view->begin(), view->end()), v);
  EXPECT_FALSE(compress::viewDense(good, 4));
  EXPECT_FALSE(compress::viewDense(encodeDense(std::vector<float>{1.0f, NAN, 3.0f}), 3));
  EXPECT_FALSE(compress::viewDense(encodeDense(std::vector<float>{1.0f, INFINITY, 3.0f}), 3));
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(compress::viewDense(longer, 3));
  EXPECT_FALSE(compress::viewDense(std::span(good).first(good.size() - 1), 3));
  auto codec = topk(0.5);
  compress::Encoded sparse;
  ASSERT_TRUE(codec->encode(v, sparse));
  EXPECT_FALSE(compress::viewDense(sparse.bytes, 3));

  ReplicaTable t(3);
  const auto nan =
      std::make_shared<const std::vector<std::uint8_t>>(encodeDense(std::vector<float>{1, NAN, 3}));
  const auto r = t.applyKeyframe(5, 1, nan);
  EXPECT_EQ(r.outcome, Outcome::kInvalid);
  EXPECT_NE(r.error.find("not finite"), std::string::npos) << r.error;
}

// Receivers of one buffer share the finiteness verdict (the memory network's PayloadChecks):
// the first one's check stands for the others, a refused buffer stays refused, and each of them
// still makes the checks that depend on its own dimension.
TEST(Replicas, ReceiversOfOneBufferShareTheFinitenessVerdict) {
  const auto good = std::make_shared<const std::vector<std::uint8_t>>(
      encodeDense(std::vector<float>{1.0f, -2.0f, 3.5f}));
  net::PayloadChecks good_checks;
  ReplicaTable a(3), b(3), wrong_dim(4);
  EXPECT_EQ(a.applyKeyframe(1, 1, good, &good_checks).outcome, Outcome::kApplied);
  EXPECT_EQ(good_checks.finite_floats.load(), 1);
  EXPECT_EQ(b.applyKeyframe(1, 1, good, &good_checks).outcome, Outcome::kApplied);
  EXPECT_EQ(wrong_dim.applyKeyframe(1, 1, good, &good_checks).outcome, Outcome::kInvalid);

  const auto nan = std::make_shared<const std::vector<std::uint8_t>>(
      encodeDense(std::vector<float>{1.0f, NAN, 3.0f}));
  net::PayloadChecks nan_checks;
  EXPECT_EQ(a.applyKeyframe(2, 1, nan, &nan_checks).outcome, Outcome::kInvalid);
  EXPECT_EQ(nan_checks.finite_floats.load(), 0);
  EXPECT_EQ(b.applyKeyframe(2, 1, nan, &nan_checks).outcome, Outcome::kInvalid);
}

}  // namespace
}  // namespace phalanx::node
