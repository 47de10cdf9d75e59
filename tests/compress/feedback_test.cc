// Error-feedback recurrences against hand-computed sequences (ALGORITHMS.md §3.2).
#include "compress/feedback.h"

#include <gtest/gtest.h>

#include "compress/decode.h"
#include "tests/compress/compress_test_util.h"

namespace phalanx::compress {
namespace {

using V = std::vector<float>;

struct Pair {
  std::unique_ptr<FeedbackEncoder> sender;
  std::unique_ptr<FeedbackDecoder> receiver;
};

Pair make(const CompressorConfig& codec, FeedbackConfig fb, std::size_t dim) {
  auto c = makeCompressor(codec);
  EXPECT_TRUE(c.has_value());
  auto s = FeedbackEncoder::make(std::move(*c), fb, dim);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error());
  auto r = FeedbackDecoder::make(fb, dim, (*s)->alpha());
  EXPECT_TRUE(r.has_value());
  return {std::move(*s), std::move(*r)};
}

// Sends v and returns what the message decodes to.
V step(Pair& p, const V& v) {
  Encoded e;
  auto ok = p.sender->encode(v, e);
  EXPECT_TRUE(ok.has_value()) << (ok ? "" : ok.error());
  V q(v.size());
  EXPECT_TRUE(decode(e.bytes, q).has_value());
  EXPECT_TRUE(p.receiver->receive(e.bytes).has_value());
  return q;
}

V stateOf(FeedbackEncoder& e, const std::string& name) {
  for (auto& s : e.state()) {
    if (s.name == name) return {s.values.begin(), s.values.end()};
  }
  ADD_FAILURE() << "no state " << name;
  return {};
}

const CompressorConfig kTop1{.codec = CodecId::kTopk, .density = 1.0 / 3};

TEST(Feedback, Ef14CarriesTheErrorForward) {
  auto p = make(kTop1, {.kind = FeedbackKind::kEf14}, 3);
  EXPECT_EQ(step(p, {3, 1, 2}), (V{3, 0, 0}));
  EXPECT_EQ(stateOf(*p.sender, "error"), (V{0, 1, 2}));
  EXPECT_EQ(step(p, {0, 2, 0}), (V{0, 3, 0}));  // p = v + e = (0, 3, 2)
  EXPECT_EQ(stateOf(*p.sender, "error"), (V{0, 0, 2}));
  const V got(p.receiver->estimate().begin(), p.receiver->estimate().end());
  EXPECT_EQ(got, (V{0, 3, 0}));
}

TEST(Feedback, Ef21TracksAReplicaOnBothSides) {
  auto p = make(kTop1, {.kind = FeedbackKind::kEf21}, 3);
  EXPECT_EQ(step(p, {3, 1, 2}), (V{3, 0, 0}));
  EXPECT_EQ(step(p, {0, 2, 0}), (V{-3, 0, 0}));  // v - r = (-3, 2, 0)
  EXPECT_EQ(step(p, {0, 2, 0}), (V{0, 2, 0}));
  EXPECT_EQ(stateOf(*p.sender, "replica"), (V{0, 2, 0}));
  const V got(p.receiver->estimate().begin(), p.receiver->estimate().end());
  EXPECT_EQ(got, (V{0, 2, 0}));
}

TEST(Feedback, Ef21SgdmAveragesBeforeCompressing) {
  auto p = make(kTop1, {.kind = FeedbackKind::kEf21Sgdm, .eta = 0.5}, 3);
  EXPECT_EQ(step(p, {4, 2, 2}), (V{2, 0, 0}));  // u = (2, 1, 1)
  EXPECT_EQ(stateOf(*p.sender, "momentum"), (V{2, 1, 1}));
  EXPECT_EQ(step(p, {0, 6, 0}), (V{0, 3.5f, 0}));  // u = (1, 3.5, 0.5); u - r = (-1, 3.5, 0.5)
  EXPECT_EQ(stateOf(*p.sender, "replica"), (V{2, 3.5f, 0}));
}

TEST(Feedback, Ef21WScalesByTheSendersWeight) {
  // n = 2, w = 0.25: the sender tracks v / (n w) = 2v; the receiver's estimate is n w r = v.
  auto p = make({.codec = CodecId::kNone},
                {.kind = FeedbackKind::kEf21W, .weight = 0.25, .peers = 2}, 2);
  EXPECT_EQ(step(p, {1, -1}), (V{2, -2}));
  const V got(p.receiver->estimate().begin(), p.receiver->estimate().end());
  EXPECT_EQ(got, (V{1, -1}));
  EXPECT_EQ(step(p, {3, -1}), (V{4, 0}));
}

TEST(Feedback, DianaShiftsWithAnUnbiasedCompressor) {
  // randk with density 1 sends everything unscaled: ω = 0, alpha = 1, so h catches v at once.
  auto p = make({.codec = CodecId::kRandk, .density = 1.0, .unbiased = true},
                {.kind = FeedbackKind::kDiana}, 3);
  EXPECT_DOUBLE_EQ(p.sender->alpha(), 1.0);
  EXPECT_EQ(step(p, {1, 2, 3}), (V{1, 2, 3}));
  EXPECT_EQ(step(p, {2, 2, 2}), (V{1, 0, -1}));  // q = v - h
  const V got(p.receiver->estimate().begin(), p.receiver->estimate().end());
  EXPECT_EQ(got, (V{2, 2, 2}));
  // An explicit alpha: h moves a quarter of the way.
  auto q = make({.codec = CodecId::kRandk, .density = 1.0, .unbiased = true},
                {.kind = FeedbackKind::kDiana, .alpha = 0.25}, 1);
  step(q, {4});
  EXPECT_EQ(stateOf(*q.sender, "shift"), (V{1}));
  EXPECT_EQ(step(q, {4}), (V{3}));
  EXPECT_EQ(q.receiver->estimate()[0], 4.0f);  // h + q = 1 + 3
}

TEST(Feedback, DianaRefusesBiasedCompressorsAndAlphaFollowsOmega) {
  auto c = makeCompressor({.codec = CodecId::kTopk});
  auto e = FeedbackEncoder::make(std::move(*c), {.kind = FeedbackKind::kDiana}, 10);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().find("unbiased"), std::string::npos);
  auto r = makeCompressor({.codec = CodecId::kRandk, .density = 0.25, .unbiased = true});
  auto d = FeedbackEncoder::make(std::move(*r), {.kind = FeedbackKind::kDiana}, 100);
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ((*d)->alpha(), 0.25);  // ω = d/k - 1 = 3
}

TEST(Feedback, SharedSeedsDrawTheSameCoordinatesOnEveryNode) {
  // compression.shared_seed: every node's randomness from the run's seed alone, so rand-k
  // picks the same coordinates everywhere in the same call; independent seeds (the default)
  // pick different ones.
  const auto picked = [](std::uint64_t node, bool shared, float fill) {
    CompressorConfig c{.codec = CodecId::kRandk, .density = 0.05, .unbiased = true};
    c.seed = compressionSeed(7, node, shared);
    auto codec = std::move(*makeCompressor(c));
    Encoded q;
    EXPECT_TRUE(codec->encode(V(400, fill), q));
    V out(400);
    EXPECT_TRUE(decode(q.bytes, out));
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i] != 0) at.push_back(i);
    }
    return at;
  };
  EXPECT_EQ(picked(0, true, 1.0f), picked(3, true, -2.0f));
  EXPECT_EQ(picked(0, true, 1.0f).size(), 20u);
  EXPECT_NE(picked(0, false, 1.0f), picked(3, false, 1.0f));
  EXPECT_EQ(compressionSeed(7, 0, true), compressionSeed(7, 9, true));
  EXPECT_NE(compressionSeed(7, 0, true), compressionSeed(8, 0, true));
}

TEST(Feedback, DgcIsNotAWrapperAndEveryOtherKindIs) {
  for (const auto& e : kFeedbacks.entries) {
    auto codec = makeCompressor({.codec = CodecId::kRandk, .density = 0.5, .unbiased = true});
    auto made = FeedbackEncoder::make(std::move(*codec), {.kind = e.value}, 8);
    EXPECT_EQ(made.has_value(), e.value != FeedbackKind::kDgc) << e.name;
    if (!made) {
      EXPECT_NE(made.error().find("dgc is not an error-feedback wrapper"), std::string::npos);
    }
    EXPECT_EQ(FeedbackDecoder::make({.kind = e.value}, 8, 0.5).has_value(),
              e.value != FeedbackKind::kDgc)
        << e.name;
  }
}

TEST(Feedback, ReceiverRejectsGarbageWithoutChangingState) {
  auto p = make(kTop1, {.kind = FeedbackKind::kEf21}, 3);
  step(p, {3, 1, 2});
  const std::vector<std::uint8_t> junk{1, 3, 0, 0, 3, 0, 0, 0, 0xff};
  EXPECT_FALSE(p.receiver->receive(junk).has_value());
  const V got(p.receiver->estimate().begin(), p.receiver->estimate().end());
  EXPECT_EQ(got, (V{3, 0, 0}));
}

TEST(Feedback, Ef21ConvergesToAFixedVector) {
  const auto v = testing::bellVector(500, 3);
  auto p =
      make({.codec = CodecId::kTopk, .density = 0.05}, {.kind = FeedbackKind::kEf21}, v.size());
  for (int i = 0; i < 40; ++i) step(p, v);
  const V got(p.receiver->estimate().begin(), p.receiver->estimate().end());
  EXPECT_LT(testing::sqDist(got, v), 1e-10 * testing::sqNorm(v));
}

}  // namespace
}  // namespace phalanx::compress
