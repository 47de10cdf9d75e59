// Every codec: round trips, the properties of ALGORITHMS.md §3.1, sizes and fixed bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "compress/compressor.h"
#include "compress/decode.h"
#include "compress/formats.h"
#include "tests/compress/compress_test_util.h"

namespace phalanx::compress {
namespace {

using testing::bellVector;
using testing::codecId;
using testing::makeOrDie;
using testing::portableVector;
using testing::roundTrip;
using testing::sqDist;
using testing::sqNorm;

TEST(Codecs, FactoryRejectsBadSettingsNamingTheField) {
  EXPECT_EQ(codecNamed("zip"), nullptr);      // names are refused where they are parsed
  EXPECT_EQ(codecNamed("layered"), nullptr);  // built by the library only
  for (const CodecId id : {CodecId::kLayered, CodecId(200)}) {
    EXPECT_NE(makeCompressor({.codec = id}).error().find("compression.codec"), std::string::npos);
  }
  EXPECT_NE(
      makeCompressor({.codec = CodecId::kTopk, .density = 0}).error().find("compression.density"),
      std::string::npos);
  EXPECT_NE(makeCompressor({.codec = CodecId::kQsgd, .bits = 1}).error().find("compression.bits"),
            std::string::npos);
  EXPECT_NE(makeCompressor({.codec = CodecId::kTopk, .values = ValueType(9)})
                .error()
                .find("compression.values"),
            std::string::npos);
  EXPECT_NE(makeCompressor({.codec = CodecId::kPowersgd}).error().find("layer shapes"),
            std::string::npos);
  EXPECT_NE(makeCompressor({.codec = CodecId::kSign, .bucket = std::size_t{1} << 33})
                .error()
                .find("compression.bucket"),
            std::string::npos);
}

TEST(Codecs, DenseCastsRoundTrip) {
  const std::vector<float> x{0.0f, -1.5f, 3.140625f, 65504.0f, 1e-3f};
  EXPECT_EQ(roundTrip(*makeOrDie({.codec = CodecId::kNone}), x), x);
  const auto h = roundTrip(*makeOrDie({.codec = CodecId::kFp16}), x);
  EXPECT_EQ(h[1], -1.5f);
  EXPECT_EQ(h[2], 3.140625f);
  EXPECT_NEAR(h[4], 1e-3f, 1e-6f);
  const auto b = roundTrip(*makeOrDie({.codec = CodecId::kBf16}), x);
  EXPECT_EQ(b[1], -1.5f);
  EXPECT_NEAR(b[2], 3.140625f, 0.02f);
}

TEST(Codecs, TopkIsExactWithTiesByIndex) {
  const std::vector<float> x{1, -3, 3, 2, -3, 0.5};
  auto c = makeOrDie({.codec = CodecId::kTopk, .density = 2.0 / 6});
  EXPECT_EQ(roundTrip(*c, x), (std::vector<float>{0, -3, 3, 0, 0, 0}));
}

// int2 values (SparseLoCo's low-bit top-k): |v| split at its mean 2.5 into {2, 1} and {4, 3},
// each side sent as its mean (1.5 and 3.5), with the signs.
TEST(Codecs, TopkInt2SendsTwoMagnitudesAndSigns) {
  const std::vector<float> x{4, -1, 0.5, -3, 2, 0, 0, 0};
  auto c = makeOrDie({.codec = CodecId::kTopk, .density = 0.5, .values = ValueType::kInt2});
  EXPECT_EQ(roundTrip(*c, x), (std::vector<float>{3.5, -1.5, 0, -3.5, 1.5, 0, 0, 0}));
  EXPECT_EQ(valuesBytes(ValueType::kInt2, 4), 9u);  // two f32 magnitudes, one byte of codes
  EXPECT_EQ(valuesBytes(ValueType::kInt2, 5), 10u);
  EXPECT_EQ(valuesBytes(ValueType::kInt2, 0), 0u);
  // All kept values equal: one side, exact.
  EXPECT_EQ(roundTrip(*c, std::vector<float>{2, -2, 0, 2, 0, -2, 0, 0}),
            (std::vector<float>{2, -2, 0, 2, 0, -2, 0, 0}));
  // Bytes per entry at 1 % of a million: the index coding plus 2 bits, against fp16's 16.
  const auto big = bellVector(1'000'000, 9);
  Encoded e16, e2;
  ASSERT_TRUE(makeOrDie({.codec = CodecId::kTopk, .density = 0.01, .values = ValueType::kFp16})
                  ->encode(big, e16)
                  .has_value());
  ASSERT_TRUE(makeOrDie({.codec = CodecId::kTopk, .density = 0.01, .values = ValueType::kInt2})
                  ->encode(big, e2)
                  .has_value());
  EXPECT_EQ(e16.bytes.size() - e2.bytes.size(), 10'000u * 2 - (8 + 10'000u / 4));
}

// topk: ‖C(x) - x‖² <= (1 - k/d)‖x‖² for every x; biased randk: with equality in expectation.
TEST(Codecs, TopkAndBiasedRandkContract) {
  const auto x = bellVector(5000, 1);
  for (const double density : {0.001, 0.01, 0.3}) {
    const double bound =
        (1.0 - double(keptCount(density, x.size())) / double(x.size())) * sqNorm(x);
    auto topk = makeOrDie({.codec = CodecId::kTopk, .density = density});
    EXPECT_LE(sqDist(x, roundTrip(*topk, x)), bound * (1 + 1e-9)) << density;
    auto randk =
        makeOrDie({.codec = CodecId::kRandk, .density = density, .unbiased = false, .seed = 9});
    double mean = 0;
    for (int draw = 0; draw < 400; ++draw) mean += sqDist(x, roundTrip(*randk, x)) / 400;
    EXPECT_NEAR(mean, bound, 0.02 * sqNorm(x)) << density;
  }
}

TEST(Codecs, TopkSampledKeepsAboutKOfTheLargest) {
  const auto x = bellVector(1 << 18, 2);
  auto c = makeOrDie({.codec = CodecId::kTopkSampled, .density = 0.001, .seed = 3});
  Encoded e;
  const auto y = roundTrip(*c, x, &e);
  const std::size_t k = keptCount(0.001, x.size());
  std::size_t kept = 0;
  float smallest_kept = INFINITY, largest_dropped = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    if (y[j] != 0) {
      ++kept;
      EXPECT_EQ(y[j], x[j]);
      smallest_kept = std::min(smallest_kept, std::abs(x[j]));
    } else {
      largest_dropped = std::max(largest_dropped, std::abs(x[j]));
    }
  }
  EXPECT_GE(kept * 10, k * 8);
  EXPECT_LE(kept * 10, k * 13);
  EXPECT_GE(smallest_kept, largest_dropped);  // a threshold rule: every kept entry dominates
}

TEST(Codecs, ThresholdKeepsEverythingAtOrAboveLambda) {
  const std::vector<float> x{0.1f, -0.5f, 0.49f, 2.0f, -0.5f};
  auto c = makeOrDie({.codec = CodecId::kThreshold, .threshold = 0.5});
  EXPECT_EQ(roundTrip(*c, x), (std::vector<float>{0, -0.5f, 0, 2.0f, -0.5f}));
  const std::vector<float> small{0.1f, 0.2f};
  EXPECT_EQ(roundTrip(*c, small), (std::vector<float>{0, 0}));  // an empty message is fine
}

// E[C(x)] = x: the mean of N independent draws is within a few standard errors of x.
void expectUnbiased(const CompressorConfig& config, std::size_t draws) {
  const auto x = portableVector(96, 11);
  auto c = makeOrDie(config);
  const double omega = *c->varianceFactor(x.size());
  std::vector<double> mean(x.size(), 0.0);
  double spread = 0;
  for (std::size_t n = 0; n < draws; ++n) {
    const auto y = roundTrip(*c, x);
    spread += sqDist(x, y);
    for (std::size_t j = 0; j < x.size(); ++j) mean[j] += y[j] / double(draws);
  }
  double bias = 0;
  for (std::size_t j = 0; j < x.size(); ++j) bias += (mean[j] - x[j]) * (mean[j] - x[j]);
  spread /= double(draws);
  EXPECT_GT(spread, 0) << codecName(config.codec) << ": no randomness at all";
  EXPECT_LE(spread, omega * sqNorm(x) * 1.05)
      << codecName(config.codec) << ": variance above ω‖x‖²";
  // E‖mean - x‖² = spread / draws; a biased codec would sit far above this.
  EXPECT_LE(bias, 4.0 * spread / double(draws)) << codecName(config.codec);
}

TEST(Codecs, UnbiasedCompressorsAreUnbiased) {
  expectUnbiased({.codec = CodecId::kRandk, .density = 0.25, .unbiased = true, .seed = 5}, 4000);
  expectUnbiased({.codec = CodecId::kQsgd, .bits = 3, .bucket = 32, .unbiased = true, .seed = 6},
                 4000);
  expectUnbiased({.codec = CodecId::kNatural, .seed = 7}, 4000);
  expectUnbiased({.codec = CodecId::kTerngrad, .seed = 8}, 4000);  // uniform x: 2.5σ clips nothing
}

TEST(Codecs, BiasedQsgdShrinksByItsFactor) {
  const auto x = portableVector(64, 4);
  auto biased = makeOrDie({.codec = CodecId::kQsgd, .bits = 2, .bucket = 64, .unbiased = false});
  Encoded e;
  ASSERT_TRUE(biased->encode(x, e).has_value());
  ASSERT_FALSE(biased->varianceFactor(64).has_value());
  // s = 1 level, B = 64: the norm travels divided by 1 + min(64, 8) = 9.
  float norm_sent = 0;
  std::memcpy(&norm_sent, e.bytes.data() + kHeaderBytes + 8, 4);
  EXPECT_NEAR(norm_sent, std::sqrt(sqNorm(x)) / 9.0, 1e-5);
}

TEST(Codecs, SignErrorIdentityPerBucket) {
  const auto x = bellVector(1000, 5);
  for (const std::size_t bucket : {std::size_t{1000}, std::size_t{128}, std::size_t{7}}) {
    auto c = makeOrDie({.codec = CodecId::kSign, .bucket = bucket});
    const auto y = roundTrip(*c, x);
    double expected = 0;
    for (std::size_t b = 0; b < x.size(); b += bucket) {
      const std::size_t n = std::min(bucket, x.size() - b);
      double sq = 0, l1 = 0;
      for (std::size_t j = b; j < b + n; ++j) {
        sq += double(x[j]) * x[j];
        l1 += std::abs(double(x[j]));
      }
      expected += sq - l1 * l1 / double(n);
    }
    EXPECT_NEAR(sqDist(x, y), expected, 1e-4 * expected) << "bucket " << bucket;
  }
}

TEST(Codecs, NaturalIsExactOnPowersOfTwo) {
  const std::vector<float> x{1.0f, -0.25f, 0.0f, 1024.0f, -0x1p-20f};
  auto c = makeOrDie({.codec = CodecId::kNatural});
  EXPECT_EQ(roundTrip(*c, x), x);
}

TEST(Codecs, PowerSgdRecoversARankOneMatrixExactly) {
  const std::size_t rows = 12, cols = 9;
  std::vector<float> x(rows * cols + 3);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j)
      x[i * cols + j] = float(int(i) - 5) * float(j + 1) * 0.25f;
  }
  x[rows * cols] = 1.5f;  // a bias: goes dense
  x[rows * cols + 1] = -2.0f;
  auto c = makeOrDie({.codec = CodecId::kPowersgd, .rank = 1, .layers = {{rows, cols}, {3, 1}}});
  const auto y = roundTrip(*c, x);
  for (std::size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(y[j], x[j], 1e-4f) << j;
}

TEST(Codecs, PowerSgdErrorShrinksWithRankAndWarmStart) {
  const std::size_t rows = 40, cols = 30;
  const auto x = bellVector(rows * cols, 8);
  double previous = INFINITY;
  for (const int rank : {1, 4, 12}) {
    auto c = makeOrDie({.codec = CodecId::kPowersgd, .rank = rank, .layers = {{rows, cols}}});
    const double first = sqDist(x, roundTrip(*c, x));
    double last = first;
    for (int it = 0; it < 5; ++it) last = sqDist(x, roundTrip(*c, x));  // power iterations
    EXPECT_LE(last, first * (1 + 1e-6)) << rank;
    EXPECT_LT(last, previous) << rank;
    previous = last;
  }
}

TEST(Codecs, EncodeRejectsNonFiniteValuesItWouldSend) {
  std::vector<float> x(100, 1.0f);
  x[3] = std::nanf("");
  for (const std::string codec : {"none", "fp16", "bf16", "topk", "topk_sampled", "threshold",
                                  "qsgd", "sign", "terngrad", "natural"}) {
    auto c = makeOrDie({.codec = codecId(codec), .density = 0.05});
    Encoded e;
    EXPECT_FALSE(c->encode(x, e).has_value()) << codec;
  }
}

TEST(Codecs, TheRegistryListsEveryWireIdOnceInOrder) {
  std::size_t i = 0;
  for (const CodecInfo& c : kCodecs) {
    EXPECT_EQ(std::size_t(c.id), i++) << c.name;
    EXPECT_EQ(codecInfo(c.id), &c);
    EXPECT_EQ(codecName(c.id), c.name);
    EXPECT_EQ(codecNamed(c.name), c.configurable ? &c : nullptr) << c.name;
    EXPECT_TRUE(!c.by_density || c.sparse) << c.name;
  }
  EXPECT_EQ(codecName(CodecId(200)), "unknown");
  EXPECT_EQ(codecNamed("layered"), nullptr);  // built by the library, never configured
  EXPECT_EQ(kCodecNames.size(), std::size(kCodecs) - 1);
  // A sparse codec sends a subset: at density 0.01 of 1000 values, far fewer bytes than dense.
  const auto x = portableVector(1000, 5);
  for (const CodecInfo& c : kCodecs) {
    if (!c.sparse) continue;
    auto codec = makeOrDie({.codec = c.id, .density = 0.01, .threshold = 0.99});
    Encoded e;
    ASSERT_TRUE(codec->encode(x, e).has_value()) << c.name;
    EXPECT_LT(e.bytes.size(), 1000u) << c.name;
  }
}

TEST(Codecs, EveryCodecHandlesEmptyAndTinyVectors) {
  for (const std::string& codec : kCodecNames) {
    if (codec == "powersgd") continue;
    for (const std::size_t d : {0u, 1u, 3u}) {
      auto c = makeOrDie({.codec = codecId(codec)});
      const auto x = portableVector(d, 3);
      const auto y = roundTrip(*c, x);
      EXPECT_EQ(y.size(), d) << codec;
    }
  }
}

TEST(Codecs, SameInputAndSeedGiveTheSameBytes) {
  const auto x = bellVector(4096, 12);
  for (const std::string& codec : kCodecNames) {
    CompressorConfig config{.codec = codecId(codec), .density = 0.02, .seed = 77};
    if (codec == "powersgd") config.layers = {{64, 64}};
    auto a = makeOrDie(config), b = makeOrDie(config);
    Encoded ea, eb;
    for (int round = 0; round < 3; ++round) {
      ASSERT_TRUE(a->encode(x, ea).has_value());
      ASSERT_TRUE(b->encode(x, eb).has_value());
      EXPECT_EQ(ea.bytes, eb.bytes) << codec << " round " << round;
    }
  }
}

// The bytes for a fixed input pinned by hash: a change here changes the wire (FORMAT.md) or
// breaks determinism across machines. Inputs come from std::mt19937, fixed by the standard.
TEST(Codecs, GoldenBytes) {
  const auto x = bellVector(4096, 12);
  std::map<std::string, std::uint64_t> hashes;
  for (const std::string& codec : kCodecNames) {
    CompressorConfig config{
        .codec = codecId(codec), .density = 0.02, .values = ValueType::kFp16, .seed = 77};
    if (codec == "powersgd") config.layers = {{64, 64}};
    Encoded e;
    ASSERT_TRUE(makeOrDie(config)->encode(x, e).has_value());
    hashes[codec] = testing::fnv1a(e.bytes);
  }
  const std::map<std::string, std::uint64_t> golden{
#include "tests/compress/golden_hashes.inc"
  };
  for (const auto& [codec, hash] : hashes) {
    EXPECT_EQ(hash, golden.contains(codec) ? golden.at(codec) : 0)
        << "{\"" << codec << "\", " << hash << "ull},";
  }
}

TEST(Codecs, SizeTargets) {
  const std::size_t d = 1 << 20;
  const auto x = bellVector(d, 13);
  const double dense = 4.0 * double(d);
  Encoded e;
  ASSERT_TRUE(makeOrDie({.codec = CodecId::kTopk, .density = 0.01, .values = ValueType::kFp16})
                  ->encode(x, e)
                  .has_value());
  const double topk_ratio = dense / double(e.bytes.size());
  EXPECT_GE(topk_ratio, 100.0);
  ASSERT_TRUE(makeOrDie({.codec = CodecId::kSign})->encode(x, e).has_value());
  EXPECT_GE(dense / double(e.bytes.size()), 30.0);
  RecordProperty("topk_1pct_fp16_ratio", std::to_string(topk_ratio));
}

TEST(Codecs, RandkIndicesArePortableAndUniform) {
  std::vector<std::uint32_t> a, b;
  detail::randkIndices(123, 1000, 100, a);
  detail::randkIndices(123, 1000, 100, b);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::adjacent_find(a.begin(), a.end()), a.end());
  // Each index is drawn with probability k/d: count hits over many seeds.
  std::vector<int> hits(50, 0);
  for (std::uint64_t s = 0; s < 20000; ++s) {
    detail::randkIndices(s, 50, 5, a);
    for (auto j : a) ++hits[j];
  }
  for (const int h : hits) EXPECT_NEAR(h, 2000, 200);  // ~4.7 standard deviations
}

}  // namespace
}  // namespace phalanx::compress
