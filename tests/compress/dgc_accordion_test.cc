// DGC's warm-up, momentum correction and masking; Accordion's switching on scripted norms.
#include <gtest/gtest.h>

#include "compress/accordion.h"
#include "compress/decode.h"
#include "compress/dgc.h"
#include "compress/feedback.h"
#include "tests/compress/compress_test_util.h"

namespace phalanx::compress {
namespace {

using V = std::vector<float>;

TEST(Dgc, WarmupDensitiesThenTheTarget) {
  auto dgc = DgcEncoder::make({.density = 0.001});
  ASSERT_TRUE(dgc.has_value());
  EXPECT_DOUBLE_EQ((*dgc)->densityAt(0), 0.25);
  EXPECT_DOUBLE_EQ((*dgc)->densityAt(1), 0.0625);
  EXPECT_DOUBLE_EQ((*dgc)->densityAt(2), 0.015625);
  EXPECT_DOUBLE_EQ((*dgc)->densityAt(3), 0.00390625);
  EXPECT_DOUBLE_EQ((*dgc)->densityAt(4), 0.001);
  EXPECT_DOUBLE_EQ((*dgc)->densityAt(400), 0.001);
  auto coarse = DgcEncoder::make({.density = 0.1});
  EXPECT_DOUBLE_EQ((*coarse)->densityAt(2), 0.1);  // never below the target
}

TEST(Dgc, MomentumCorrectionMaskingAndDenseBiases) {
  // A 40 x 50 weight (sparse at 1%: 20 entries) and a 40-entry bias (dense).
  const std::size_t w = 2000, b = 40;
  auto made = DgcEncoder::make(
      {.density = 0.01, .momentum = 0.5, .seed = 3, .layers = {{40, 50}, {40, 1}}});
  ASSERT_TRUE(made.has_value());
  DgcEncoder& dgc = **made;
  const auto g1 = testing::bellVector(w + b, 1), g2 = testing::bellVector(w + b, 2);
  Encoded e;
  V decoded(w + b);

  ASSERT_TRUE(dgc.encode(g1, 10, e).has_value());
  ASSERT_TRUE(decode(e.bytes, decoded).has_value());
  std::size_t sent = 0;
  for (std::size_t j = 0; j < w; ++j) {
    if (decoded[j] != 0) {
      ++sent;
      EXPECT_EQ(decoded[j], g1[j]);        // v = u = g after one step
      EXPECT_EQ(dgc.momentum()[j], 0.0f);  // masked
      EXPECT_EQ(dgc.accumulated()[j], 0.0f);
    } else {
      EXPECT_EQ(dgc.accumulated()[j], g1[j]);  // kept for later
    }
  }
  EXPECT_GE(sent, 16u);
  EXPECT_LE(sent, 26u);
  for (std::size_t j = w; j < w + b; ++j) EXPECT_EQ(decoded[j], g1[j]);  // the bias: u = g

  const V u_before(dgc.momentum().begin(), dgc.momentum().end());
  const V v_before(dgc.accumulated().begin(), dgc.accumulated().end());
  ASSERT_TRUE(dgc.encode(g2, 10, e).has_value());
  ASSERT_TRUE(decode(e.bytes, decoded).has_value());
  for (std::size_t j = 0; j < w; ++j) {
    const float u = 0.5f * u_before[j] + g2[j];
    const float v = v_before[j] + u;
    // Sent entries carry v; the rest stay in v, and u and v are masked together.
    EXPECT_FLOAT_EQ(decoded[j] + dgc.accumulated()[j], v) << j;
    if (decoded[j] != 0) {
      EXPECT_EQ(dgc.momentum()[j], 0.0f);
    }
  }
  for (std::size_t j = w; j < w + b; ++j) EXPECT_FLOAT_EQ(decoded[j], 0.5f * g1[j] + g2[j]);
}

TEST(Dgc, LocalClippingScalesByOneOverSqrtN) {
  auto made = DgcEncoder::make({.density = 0.5, .clip_norm = 2.0, .nodes = 4});
  const V g{3, 4};  // ‖g‖ = 5 > 2 / sqrt(4) = 1
  Encoded e;
  ASSERT_TRUE((*made)->encode(g, 10, e).has_value());
  V y(2);
  ASSERT_TRUE(decode(e.bytes, y).has_value());
  const double norm =
      std::hypot(y[0] + (*made)->accumulated()[0], y[1] + (*made)->accumulated()[1]);
  EXPECT_NEAR(norm, 1.0, 1e-6);
}

// Feeds each window one gradient per layer whose norm is scripted.
std::span<const Level> window(AccordionController& a, std::vector<float> norms,
                              bool lr_drop = false) {
  for (std::size_t l = 0; l < norms.size(); ++l) {
    const V g{norms[l] * 0.6f, norms[l] * 0.8f};
    a.accumulate(l, g);
  }
  return a.endWindow(lr_drop);
}

TEST(Accordion, SwitchesOnScriptedNorms) {
  AccordionController a(2, {.eta = 0.5, .switch_every = 1});
  auto lv = window(a, {10, 10});
  EXPECT_EQ(lv[0], Level::kLow);  // the first window is critical
  lv = window(a, {10, 4});        // ratios 0 and 0.6
  EXPECT_EQ(lv[0], Level::kHigh);
  EXPECT_EQ(lv[1], Level::kLow);
  EXPECT_NEAR(a.ratios()[1], 0.6, 1e-6);
  lv = window(a, {2, 3.9f});  // 0.8 and 0.025
  EXPECT_EQ(lv[0], Level::kLow);
  EXPECT_EQ(lv[1], Level::kHigh);
  lv = window(a, {2, 3.9f}, true);  // a learning-rate drop forces LOW
  EXPECT_EQ(lv[0], Level::kLow);
  EXPECT_EQ(lv[1], Level::kLow);
}

TEST(Accordion, DecidesOnlyEverySwitchEveryWindows) {
  AccordionController a(1, {.eta = 0.5, .switch_every = 2});
  EXPECT_EQ(window(a, {10})[0], Level::kLow);   // window 1: decision (first)
  EXPECT_EQ(window(a, {10})[0], Level::kLow);   // window 2: no decision
  EXPECT_EQ(window(a, {10})[0], Level::kHigh);  // window 3: ratio 0
  EXPECT_EQ(window(a, {1})[0], Level::kHigh);   // window 4: no decision
  EXPECT_EQ(window(a, {1})[0], Level::kLow);    // window 5: ratio 0.9
}

TEST(Accordion, LevelPairsPerCodec) {
  auto topk = accordionLevels({.codec = CodecId::kTopk, .density = 0.01});
  ASSERT_TRUE(topk.has_value());
  EXPECT_DOUBLE_EQ(topk->second.density, 0.001);
  auto qsgd = accordionLevels({.codec = CodecId::kQsgd, .bits = 8});
  EXPECT_EQ(qsgd->second.bits, 4);
  auto psgd = accordionLevels({.codec = CodecId::kPowersgd, .rank = 2});
  EXPECT_EQ(psgd->second.rank, 1);
  EXPECT_FALSE(accordionLevels({.codec = CodecId::kSign}).has_value());
}

TEST(Accordion, ErrorFeedbackSurvivesASwitch) {
  const std::vector<LayerShape> layers{{20, 50}, {20, 1}};
  auto levels = accordionLevels({.codec = CodecId::kTopk, .density = 0.1, .layers = layers});
  auto adaptive = AdaptiveCompressor::make(levels->first, levels->second);
  ASSERT_TRUE(adaptive.has_value());
  AdaptiveCompressor* raw = adaptive->get();
  auto ef = FeedbackEncoder::make(std::move(*adaptive), {.kind = FeedbackKind::kEf14}, 1020);
  ASSERT_TRUE(ef.has_value());
  V error(1020, 0.0f);
  std::size_t bytes_low = 0, bytes_high = 0;
  for (int step = 0; step < 6; ++step) {
    if (step == 3) raw->setLevels(std::vector<Level>{Level::kHigh, Level::kHigh});
    const auto v = testing::bellVector(1020, std::uint32_t(step));
    Encoded e;
    ASSERT_TRUE((*ef)->encode(v, e).has_value());
    (step < 3 ? bytes_low : bytes_high) += e.bytes.size();
    V q(1020);
    ASSERT_TRUE(decode(e.bytes, q).has_value());
    const auto now = (*ef)->state()[0].values;
    for (std::size_t j = 0; j < v.size(); ++j) {
      ASSERT_FLOAT_EQ(v[j] + error[j], q[j] + now[j]) << "step " << step;  // p = q + e
    }
    error.assign(now.begin(), now.end());
  }
  EXPECT_LT(bytes_high * 3, bytes_low);  // HIGH sends a tenth of the entries
}

}  // namespace
}  // namespace phalanx::compress
