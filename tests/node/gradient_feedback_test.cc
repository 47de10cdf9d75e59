// GradientFeedback (ALGORITHMS.md §3.2, §3.4): the EMA momentum by hand, standalone messages
// that decode to the pivot, DGC's masking seen through the message, EF21-SGDM's tracked
// momentum, and a checkpoint round trip that continues bit-identically.
#include "node/exchange/gradient_feedback.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "compress/decode.h"

namespace phalanx::node {
namespace {

using ::testing::HasSubstr;

Config gradientConfig(const std::string& feedback, const std::string& codec) {
  Config c;
  c.exchange = Exchange::kGradient;
  c.optimizer.momentum = 0.75;
  c.compression.feedback = compress::kFeedbacks.parse(feedback).value();
  c.compression.codec = compress::codecNamed(codec)->id;
  c.compression.eta = 0.25;
  return c;
}

std::unique_ptr<compress::Compressor> codecFor(const Config& c,
                                               std::vector<compress::LayerShape> layers) {
  if (c.compression.codec == compress::CodecId::kNone) return nullptr;
  compress::CompressorConfig k = compressorConfig(c.compression);
  k.layers = std::move(layers);
  return std::move(*compress::makeCompressor(k));
}

TEST(GradientFeedback, DenseMomentumIsTheEmaByHandAndIsThePivot) {
  const Config c = gradientConfig("none", "none");
  GradientFeedback ex(c, 3, {{3, 1}}, 4, nullptr);
  EXPECT_EQ(ex.kind(), GradientFeedback::Kind::kStandalone);
  const std::vector<float> g1{4, -8, 2}, g2{0, 4, -4};
  auto q = ex.encode(g1, 0);
  ASSERT_TRUE(q) << q.error();
  // m = 0.75·0 + 0.25·g1
  EXPECT_THAT(std::vector<float>(ex.own().begin(), ex.own().end()),
              ::testing::ElementsAre(1, -2, 0.5));
  q = ex.encode(g2, 0);
  ASSERT_TRUE(q);
  // m = 0.75·(1, -2, 0.5) + 0.25·(0, 4, -4) = (0.75, -0.5, -0.625)
  EXPECT_THAT(std::vector<float>(ex.own().begin(), ex.own().end()),
              ::testing::ElementsAre(0.75, -0.5, -0.625));
  std::vector<float> decoded(3);
  ASSERT_TRUE(compress::decode(*q, decoded));
  EXPECT_EQ(decoded, std::vector<float>(ex.own().begin(), ex.own().end()));
  EXPECT_FALSE(ex.encode(std::vector<float>{1, NAN, 0}, 0));
  EXPECT_FALSE(ex.encode(std::vector<float>{1, 2}, 0));
}

TEST(GradientFeedback, CompressedMessagesDecodeToThePivot) {
  const Config c = gradientConfig("ef14", "topk");
  const std::vector<compress::LayerShape> layers{{4, 1}};
  GradientFeedback ex(c, 4, layers, 4, codecFor(c, layers));
  // density 0.01 keeps one entry: the largest of m = 0.25·g.
  auto q = ex.encode(std::vector<float>{4, -8, 2, 1}, 0);
  ASSERT_TRUE(q);
  EXPECT_THAT(std::vector<float>(ex.own().begin(), ex.own().end()),
              ::testing::ElementsAre(0, -2, 0, 0));
  // EF14 carries the rest: next round p = m + e, with m = 0.75·m + 0 and e = (1, 0, 0.5, 0.25).
  q = ex.encode(std::vector<float>{0, 0, 0, 0}, 0);
  ASSERT_TRUE(q);
  // m = (0.75, -1.5, 0.375, 0.1875); p = (1.75, -1.5, 0.875, 0.4375): the largest is the first.
  EXPECT_THAT(std::vector<float>(ex.own().begin(), ex.own().end()),
              ::testing::ElementsAre(1.75, 0, 0, 0));
}

TEST(GradientFeedback, DgcMasksWhatItSent) {
  Config c = gradientConfig("dgc", "topk_sampled");
  c.compression.density = 0.25;
  // One 4 x 8 matrix (sparse: 32 >= 2/0.25) and a bias of 4 (dense).
  const std::vector<compress::LayerShape> layers{{4, 8}, {4, 1}};
  GradientFeedback ex(c, 36, layers, 4, nullptr);
  EXPECT_EQ(ex.kind(), GradientFeedback::Kind::kDgc);
  std::vector<float> g(36);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = float(i % 7) - 3.0f;
  auto q = ex.encode(g, /*epoch=*/100);  // past the warm-up: density 0.25
  ASSERT_TRUE(q) << q.error();
  std::vector<float> decoded(36);
  ASSERT_TRUE(compress::decode(*q, decoded));
  EXPECT_EQ(decoded, std::vector<float>(ex.own().begin(), ex.own().end()));
  std::size_t sent = 0;
  for (std::size_t i = 0; i < 32; ++i) sent += ex.own()[i] != 0;
  EXPECT_GE(sent, 8u * 8 / 10);  // about a quarter of the matrix (DGC's sampled threshold)
  EXPECT_LE(sent, 32u);
  for (std::size_t i = 32; i < 36; ++i)
    EXPECT_EQ(ex.own()[i], g[i]) << "the bias goes dense (u = g)";
}

TEST(GradientFeedback, Ef21SgdmTracksTheEtaMomentum) {
  const Config c = gradientConfig("ef21_sgdm", "topk");
  GradientFeedback ex(c, 2, {{2, 1}}, 4, nullptr);
  EXPECT_TRUE(ex.tracked());
  auto u = ex.track(std::vector<float>{4, 8});
  EXPECT_THAT(std::vector<float>(u.begin(), u.end()), ::testing::ElementsAre(1, 2));  // eta·g
  u = ex.track(std::vector<float>{0, 4});
  EXPECT_THAT(std::vector<float>(u.begin(), u.end()), ::testing::ElementsAre(0.75, 2.5));
}

TEST(GradientFeedback, Ef21WAndDianaTrackTheEmaMomentumThroughTheReplica) {
  // The node publishes what track() returns (EF21-W scaled by 1/(n·w), DIANA with its shift
  // step): the momentum itself is the EMA of every tracked kind but EF21-SGDM.
  for (const char* feedback : {"ef21_w", "diana"}) {
    SCOPED_TRACE(feedback);
    EXPECT_TRUE(GradientFeedback::tracks(compress::kFeedbacks.parse(feedback).value()));
    const Config c = gradientConfig(feedback, "qsgd");
    GradientFeedback ex(c, 2, {{2, 1}}, 4, nullptr);
    EXPECT_TRUE(ex.tracked());
    ex.track(std::vector<float>{4, -8});
    const auto m = ex.track(std::vector<float>{0, 4});
    // m = 0.75·(1, -2) + 0.25·(0, 4)
    EXPECT_THAT(std::vector<float>(m.begin(), m.end()), ::testing::ElementsAre(0.75, -0.5));
  }
}

TEST(GradientFeedback, CheckpointContinuesBitIdentically) {
  for (const char* feedback : {"dgc", "ef14"}) {
    Config c = gradientConfig(feedback, feedback == std::string("dgc") ? "topk_sampled" : "topk");
    c.compression.density = 0.1;
    const std::vector<compress::LayerShape> layers{{10, 10}};
    GradientFeedback a(c, 100, layers, 4, codecFor(c, layers));
    std::vector<float> g(100);
    for (int step = 0; step < 3; ++step) {
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = float((i * 37 + step * 11) % 23) - 11.0f;
      ASSERT_TRUE(a.encode(g, 10));
    }
    train::Checkpoint saved;
    a.save(saved);
    GradientFeedback b(c, 100, layers, 4, codecFor(c, layers));
    b.restore(saved);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = float(i % 5);
    const auto qa = a.encode(g, 10), qb = b.encode(g, 10);
    ASSERT_TRUE(qa && qb);
    EXPECT_EQ(*qa, *qb) << feedback;
  }
}

}  // namespace
}  // namespace phalanx::node
