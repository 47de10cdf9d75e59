// Hand-computed cases for every rule (ALGORITHMS.md §2), in one or two dimensions.
#include "robust/aggregator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/rows.h"

namespace phalanx::robust {
namespace {

using ::testing::HasSubstr;
using testing::Matrix;
using testing::views;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Mixed {
  std::vector<float> z;
  MixReport report;
};

Mixed mixWith(AggregatorConfig config, const Matrix& rows, std::size_t b,
              std::vector<double> weights = {}) {
  auto agg = makeAggregator(config);
  EXPECT_TRUE(agg.has_value()) << agg.error();
  Mixed m{std::vector<float>(rows[0].size()), {}};
  const auto v = views(rows);
  auto r = (*agg)->mix({v, b, weights}, m.z);
  EXPECT_TRUE(r.has_value()) << r.error();
  if (r) m.report = *r;
  return m;
}

std::string mixError(AggregatorConfig config, const Matrix& rows, std::size_t b) {
  auto agg = makeAggregator(config);
  if (!agg) return agg.error();
  std::vector<float> z(rows[0].size());
  const auto v = views(rows);
  auto r = (*agg)->mix({v, b, {}}, z);
  return r ? "" : r.error();
}

AggregatorConfig rule(std::string_view name, std::vector<std::string> pre = {}) {
  AggregatorConfig c;
  c.rule = kRules.parse(name).value();
  c.pre = parsePreSpecs(pre).value();
  return c;
}

TEST(Rules, TheTableListsEveryRuleOnceAndEachBuilds) {
  for (std::size_t i = 0; i < kRules.entries.size(); ++i) {
    const auto& e = kRules.entries[i];
    EXPECT_EQ(int(e.value), int(i)) << e.name;  // one entry per id, in order
    AggregatorConfig c{.rule = e.value, .tau = 1.0};
    EXPECT_TRUE(makeAggregator(c).has_value()) << e.name;
  }
  EXPECT_FALSE(kRules.parse("median").has_value());
}

TEST(Nna, KeepsTheClosestAndAveragesThem) {
  const auto m = mixWith(rule("nna"), {{0}, {1}, {2}, {10}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 1.0f);
  EXPECT_EQ(m.report.kept, (std::vector<char>{1, 1, 1, 0}));
  EXPECT_EQ(m.report.distance, (std::vector<double>{0, 1, 2, 10}));
}

TEST(Nna, TiesAreBrokenByIndex) {
  // Peers at +1 and -1 are equally far; the lower index (the +1 at row 1) wins.
  const auto m = mixWith(rule("nna"), {{0}, {1}, {-1}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 0.5f);
  EXPECT_EQ(m.report.kept, (std::vector<char>{1, 1, 0}));
}

TEST(Nna, PivotAloneWhenBudgetCoversEverything) {
  EXPECT_FLOAT_EQ(mixWith(rule("nna"), {{5}, {1}}, 2).z[0], 5.0f);
  EXPECT_FLOAT_EQ(mixWith(rule("nna"), {{5}, {1}}, 1).z[0], 5.0f);  // |S| - b = 1: c itself
  EXPECT_FLOAT_EQ(mixWith(rule("nna"), {{5}}, 0).z[0], 5.0f);       // no peers heard
}

TEST(Nna, NonFiniteRowsAreDroppedAndUseBudget) {
  auto m = mixWith(rule("nna"), {{0}, {1}, {kNan}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 0.5f);
  EXPECT_EQ(m.report.nonfinite, (std::vector<char>{0, 0, 1}));
  EXPECT_EQ(m.report.kept, (std::vector<char>{1, 1, 0}));
  EXPECT_TRUE(std::isinf(m.report.distance[2]));
  // More poisoned rows than the budget: still never in the mix.
  m = mixWith(rule("nna"), {{0}, {kNan}, {kInf}, {2}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 1.0f);
  EXPECT_EQ(m.report.effective_budget, 0u);
}

TEST(Nna, EnormousRowIsExcluded) {
  const auto m = mixWith(rule("nna"), {{0, 0}, {1, 1}, {1e30f, -1e30f}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 0.5f);
  EXPECT_FLOAT_EQ(m.z[1], 0.5f);
}

// NNA and mean finish from the sum taken in the distance pass, subtracting the excluded rows;
// the answer must be the mean of the kept rows as if summed directly.
TEST(Nna, SubtractingTheExcludedMatchesAveragingTheKept) {
  const std::size_t n = 12, d = 40000, b = 3;
  auto m = testing::gaussianRows(n, d, 1.0f, 77);
  for (std::size_t k = n - b; k < n; ++k) {
    for (float& v : m[k]) v = 3.0f * v + 0.5f;  // farther, but of the same magnitude
  }
  const auto mixed = mixWith(rule("nna"), m, b);
  for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(mixed.report.kept[k], k < n - b ? 1 : 0);
  double worst = 0;
  for (std::size_t c = 0; c < d; ++c) {
    double kept_sum = 0;
    for (std::size_t k = 0; k < n - b; ++k) kept_sum += m[k][c];
    worst = std::max(worst, std::abs(mixed.z[c] - kept_sum / double(n - b)));
  }
  EXPECT_LT(worst, 2e-6);
  const auto mean = mixWith(rule("mean"), m, 0);
  double kept_sum = 0;
  for (const auto& r : m) kept_sum += r[d - 1];
  EXPECT_NEAR(mean.z[d - 1], kept_sum / double(n), 2e-6);
}

TEST(Nna, HugeExcludedRowsOrOverflowingSumsTakeTheDirectPath) {
  // Subtracting 1e30 from a float sum would wipe out the kept rows' digits.
  auto m = mixWith(rule("nna"), {{0.1f}, {0.2f}, {0.3f}, {0.4f}, {1e30f}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 0.25f);
  // The float sum of all rows overflows; the kept rows' mean does not.
  m = mixWith(rule("nna"), {{3e38f}, {3e38f}, {3e38f}, {2e38f}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 3e38f);
  EXPECT_EQ(m.report.kept, (std::vector<char>{1, 1, 1, 0}));
  EXPECT_FLOAT_EQ(mixWith(rule("mean"), {{3e38f}, {3e38f}}, 0).z[0], 3e38f);
}

TEST(Mean, UniformMeanOfFiniteRows) {
  EXPECT_FLOAT_EQ(mixWith(rule("mean"), {{0}, {1}, {2}, {kNan}}, 0).z[0], 1.0f);
  EXPECT_FLOAT_EQ(mixWith(rule("mean"), {{0}, {1}, {2}, {9}}, 0).z[0], 3.0f);
}

TEST(Metropolis, MissingWeightStaysOnSelf) {
  // W = 0.25 for both peers heard, so W_ii = 0.5: z = 0.5*0 + 0.25*3 + 0.25*6.
  EXPECT_FLOAT_EQ(mixWith(rule("metropolis"), {{0}, {3}, {6}}, 0, {0, 0.25, 0.25}).z[0], 2.25f);
  // A NaN peer is as good as missing: its weight goes to self.
  EXPECT_FLOAT_EQ(mixWith(rule("metropolis"), {{0}, {3}, {kNan}}, 0, {0, 0.25, 0.25}).z[0], 0.75f);
}

TEST(TrimmedMean, DropsBLowestAndHighestPerCoordinate) {
  const auto m = mixWith(rule("cwtm"), {{1, 10}, {2, 20}, {3, 30}, {100, -100}}, 1);
  EXPECT_EQ(m.z, (std::vector<float>{2.5f, 15.0f}));
  EXPECT_THAT(mixError(rule("cwtm"), {{1}, {2}, {3}, {4}}, 2), HasSubstr("cwtm: 2b = 4"));
}

TEST(Median, PerCoordinate) {
  EXPECT_EQ(mixWith(rule("cwmed"), {{1, 10}, {2, 20}, {3, 30}, {100, -100}}, 0).z,
            (std::vector<float>{2.5f, 15.0f}));
  EXPECT_EQ(mixWith(rule("cwmed"), {{1}, {5}, {3}, {kNan}}, 0).z, (std::vector<float>{3.0f}));
}

TEST(GeometricMedian, SmoothedWeiszfeldThreeStepsFromZero) {
  // Scalar replay of the recurrence: w_k = 1/max(|s_k - z|, 0.1), z = Σ w s / Σ w.
  const std::vector<double> s{0, 0, 3};
  double z = 0;
  for (int t = 0; t < 3; ++t) {
    double num = 0, den = 0;
    for (double v : s) {
      const double w = 1.0 / std::max(std::abs(v - z), 0.1);
      num += w * v;
      den += w;
    }
    z = num / den;
  }
  EXPECT_NEAR(mixWith(rule("gm"), {{0}, {0}, {3}}, 0).z[0], z, 1e-6);
  // Symmetric points: the median is the centre.
  const auto m = mixWith(rule("gm"), {{1, 0}, {-1, 0}, {0, 1}, {0, -1}}, 0);
  EXPECT_NEAR(m.z[0], 0.0, 1e-7);
  EXPECT_NEAR(m.z[1], 0.0, 1e-7);
}

TEST(Krum, ScoresAreMeansOfNearestSquaredDistances) {
  // Scores with |S| - b - 1 = 2 neighbours: 2.5, 1, 2.5, 72.5.
  auto m = mixWith(rule("krum"), {{0}, {1}, {2}, {10}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 1.0f);
  EXPECT_EQ(m.report.kept, (std::vector<char>{0, 1, 0, 0}));
  m = mixWith(rule("multikrum"), {{0}, {1}, {2}, {10}}, 1);
  EXPECT_FLOAT_EQ(m.z[0], 1.0f);
  EXPECT_EQ(m.report.kept, (std::vector<char>{1, 1, 1, 0}));
  // A tie (both scores 1): the lower index.
  EXPECT_FLOAT_EQ(mixWith(rule("krum"), {{0}, {1}}, 0).z[0], 0.0f);
  EXPECT_THAT(mixError(rule("krum"), {{0}, {1}, {2}}, 2), HasSubstr("needs |S| >= b + 2"));
}

TEST(CenteredClipping, ClipsAroundTheStateAndKeepsIt) {
  AggregatorConfig c = rule("cc");
  c.tau = 1.0;
  auto agg = *makeAggregator(c);
  const Matrix m{{0}, {0.5}, {10}};
  const auto v = views(m);
  std::vector<float> z(1);
  // v = 0: clipped differences 0, 0.5, 1 -> v = 0.5.
  ASSERT_TRUE(agg->mix({v, 0, {}}, z));
  EXPECT_FLOAT_EQ(z[0], 0.5f);
  // v = 0.5 carried over: differences -0.5, 0, 9.5 -> clipped -0.5, 0, 1 -> v = 0.5 + 1/6.
  ASSERT_TRUE(agg->mix({v, 0, {}}, z));
  EXPECT_NEAR(z[0], 0.5 + 0.5 / 3.0, 1e-6);
  c.tau = 0;
  EXPECT_FALSE(makeAggregator(c).has_value());
}

TEST(ClippedGossip, FixedAndAdaptiveRadius) {
  AggregatorConfig c = rule("clipped_gossip");
  c.tau = 2.0;
  // z = c + Σ W CLIP(r - c, 2) = 0 + 0.25 * (1 + 2 + 2).
  EXPECT_FLOAT_EQ(mixWith(c, {{0}, {1}, {4}, {10}}, 0, {0, 0.25, 0.25, 0.25}).z[0], 1.25f);
  c.tau = 0;  // adaptive: the second-largest distance, 4
  EXPECT_FLOAT_EQ(mixWith(c, {{0}, {1}, {4}, {10}}, 0, {0, 0.25, 0.25, 0.25}).z[0], 2.25f);
  // One neighbour: its own distance; default weights 1/|S| = 1/2.
  EXPECT_FLOAT_EQ(mixWith(c, {{0}, {3}}, 0).z[0], 1.5f);
  EXPECT_FLOAT_EQ(mixWith(c, {{7}}, 0).z[0], 7.0f);
}

// He, Karimireddy and Jaggi's practical radius in the robust-gossip reference's weighted form
// (CShe_RG): rows by distance, pivot first; i the first whose cumulative weight reaches W − B;
// τ² = Σ_{k<i} w_k d_k² / B.
TEST(ClippedGossip, PracticalRadius) {
  const AggregatorConfig c = rule("clipped_gossip_he");
  // Distances 0, 1, 4, 10; W = 1/4 each, self 1/4; b = 1: B = 1/4, W − B = 3/4, reached exactly
  // at the third (distance 4): τ² = (0 + 1/4) / (1/4) = 1; z = 1/4 (1 + 1 + 1).
  EXPECT_NEAR(mixWith(c, {{0}, {1}, {4}, {10}}, 1, {0, 0.25, 0.25, 0.25}).z[0], 0.75, 1e-6);
  // Unequal weights 0.2, 0.3, 0.1, self 0.4: B = 0.3, W − B = 0.7, first reached at distance 4
  // (0.4 + 0.2 + 0.3): τ² = 0.2 · 1 / 0.3; every row clipped to τ: z = 0.6 τ.
  EXPECT_NEAR(mixWith(c, {{0}, {1}, {4}, {10}}, 1, {0, 0.2, 0.3, 0.1}).z[0],
              0.6 * std::sqrt(0.2 / 0.3), 1e-6);
  // Self weight 0.4 and the heaviest edge 0.3 on the nearest row: W − B is reached at that row,
  // below it only the pivot's 0: τ = 0, the mix stays at the pivot.
  EXPECT_NEAR(mixWith(c, {{0}, {1}, {4}, {10}}, 1, {0, 0.3, 0.2, 0.1}).z[0], 0.0, 1e-6);
  // b = 0: nothing is clipped, the plain weighted mean.
  EXPECT_NEAR(mixWith(c, {{0}, {1}, {4}, {10}}, 0, {0, 0.25, 0.25, 0.25}).z[0], 3.75, 1e-6);
}

TEST(RadialNna, TrimsTheOffsetsAlongTheOwnModel) {
  // Pivot (1, 0), so u = (1, 0); b = 1. NNA keeps the pivot, (0.5, 0) and (1, 1) (tied with
  // (1, -1) at distance 1, the lower index wins): (2.5/3, 1/3). Offsets along u: 0, 0, 0, -0.5;
  // trimming one each side leaves 0, so the first coordinate becomes the pivot's, 1.
  auto r = mixWith(rule("nna_rt"), {{1, 0}, {1, 1}, {1, -1}, {0.5, 0}}, 1);
  EXPECT_NEAR(r.z[0], 1.0, 1e-6);
  EXPECT_NEAR(r.z[1], 1.0 / 3, 1e-6);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 0, 1}));
  // b = 0: plain mean along u, no trimming: NNA keeps everything, so nna_rt is the mean.
  r = mixWith(rule("nna_rt"), {{1, 0}, {1, 1}, {1, -1}, {0.5, 0}}, 0);
  EXPECT_NEAR(r.z[0], 3.5 / 4, 1e-6);
  EXPECT_NEAR(r.z[1], 0.0, 1e-6);
  // A zero pivot has no direction: NNA's mix as it is.
  EXPECT_NEAR(mixWith(rule("nna_rt"), {{0, 0}, {1, 0}, {5, 0}}, 1).z[0], 0.5, 1e-6);
  // A row NNA drops counts for nothing along u either. NNA drops (0, 0) (distance 1) and keeps
  // offsets 0, 0.2, 0.2, 0: trimmed, 0.1. (With (0, 0)'s -1 among them it would be 1/15.)
  r = mixWith(rule("nna_rt"), {{1, 0}, {1.2f, 0}, {1.2f, 0.1f}, {0, 0}, {1, 0.5f}}, 1);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 1, 0, 1}));
  EXPECT_NEAR(r.z[0], 1.1, 1e-6);
  EXPECT_NEAR(r.z[1], 0.6 / 4, 1e-6);
}

// The trims' cases. In the plane: pivot (1, 0), u = (1, 0); W = 0.2 each, self 0.2; b = 1,
// B = 0.2. Cumulative weight 0.6 is reached at r2 (distance 0.6): tau = 0.6, r3 clipped by 0.3,
// r4 by 0.2 to (0.36, 0.48); clipped offsets 0 (pivot), (0, 0.5), (-0.6, 0), (0, -0.6),
// (0.36, 0.48). On a line: pivot 1, rows 1.1, 1.3, 0.5, 3 with W 0.2, 0.2, 0.2, 0.1 (self
// 0.3); B = 0.2; cumulative 0.6 falls inside r2, so tau = r1's distance, 0.1: clipped offsets
// 0 (0.3), 0.1, 0.1, -0.1, 0.1 (0.1).
const Matrix kPlane{{1, 0}, {1, 0.5f}, {0.4f, 0}, {1, -2}, {2.8f, 2.4f}};
const std::vector<double> kPlaneW{0, 0.2, 0.2, 0.2, 0.2};
const Matrix kLine{{1}, {1.1f}, {1.3f}, {0.5f}, {3}};
const std::vector<double> kLineW{0, 0.2, 0.2, 0.2, 0.1};

TEST(CsPlusRt, TrimsTheClippedOffsetsAlongTheOwnModelByWeight) {
  // cs_plus: z - c = 0.2 (0 - 0.6 + 0 + 0.36, 0.5 + 0 - 0.6 + 0.48) = (-0.048, 0.076).
  // Along u the clipped offsets -0.6, 0, 0, 0, 0.36 lose 0.2 at each end: mean 0.
  auto plain = mixWith(rule("cs_plus"), kPlane, 1, kPlaneW);
  EXPECT_NEAR(plain.z[0], 0.952, 1e-6);
  EXPECT_NEAR(plain.z[1], 0.076, 1e-6);
  auto r = mixWith(rule("cs_plus_rt"), kPlane, 1, kPlaneW);
  EXPECT_NEAR(r.z[0], 1.0, 1e-6);
  EXPECT_NEAR(r.z[1], 0.076, 1e-6);  // across u, cs_plus's step as it was
  // Unequal weights cut a row in part (the line). cs_plus: 1 + 0.03. Trimmed: -0.1 goes at the
  // bottom, 0.1 of r4 and 0.1 of r2 at the top: (0.2 + 0.1) * 0.1 / 0.6 = 0.05.
  EXPECT_NEAR(mixWith(rule("cs_plus"), kLine, 1, kLineW).z[0], 1.03, 1e-6);
  EXPECT_NEAR(mixWith(rule("cs_plus_rt"), kLine, 1, kLineW).z[0], 1.05, 1e-6);
  // b = 0: nothing clipped, nothing trimmed: cs_plus_rt is cs_plus.
  EXPECT_NEAR(mixWith(rule("cs_plus_rt"), kLine, 0, kLineW).z[0],
              mixWith(rule("cs_plus"), kLine, 0, kLineW).z[0], 1e-6);
}

TEST(CsPlusPt,
     TrimsTheClippedOffsetsAlongTheirPrincipalDirectionAndAcrossThePivotAfterTheRadialTrim) {
  // The plane: the clipped offsets' mean m = (-0.048, 0.076). Weighted covariance around m:
  // xx 0.095616, yy 0.162304, xy 0.038208; top eigenvector e = (0.413811, 0.910363). Along e:
  // 0, 0.455181, -0.248286, -0.546218, 0.585946; 0.2 off each end leaves the mean of 0,
  // 0.455181, -0.248286 = 0.068965 (times the total weight 1) in place of ⟨m, e⟩ = 0.049325:
  // z = (1, 0) + m + 0.019640 e.
  const auto r = mixWith(rule("cs_plus_pt"), kPlane, 1, kPlaneW);
  EXPECT_NEAR(r.z[0], 0.960127, 1e-5);
  EXPECT_NEAR(r.z[1], 0.093880, 1e-5);
  // cs_plus_rpt: along u the radial trim's 0 (z[0] = 1); e with its part along the pivot
  // removed is (0, 1): the offsets' second coordinates 0, 0.5, 0, -0.6, 0.48 lose 0.2 at each
  // end, mean 0.16.
  const auto both = mixWith(rule("cs_plus_rpt"), kPlane, 1, kPlaneW);
  EXPECT_NEAR(both.z[0], 1.0, 1e-5);
  EXPECT_NEAR(both.z[1], 0.16, 1e-5);
  for (const char* name : {"cs_plus_pt", "cs_plus_rpt"}) {
    SCOPED_TRACE(name);
    // On a line every direction is the line (and nothing is left across the pivot): the radial
    // trim's 1.05. b = 0: nothing clipped, nothing trimmed.
    EXPECT_NEAR(mixWith(rule(name), kLine, 1, kLineW).z[0], 1.05, 1e-6);
    EXPECT_NEAR(mixWith(rule(name), kLine, 0, kLineW).z[0],
                mixWith(rule("cs_plus"), kLine, 0, kLineW).z[0], 1e-6);
  }
}

TEST(Rules, DistancesMeasuredBeforeGiveTheSameMixBitForBit) {
  // An attacker's line search hands the rules that measure every pair the honest pairs'
  // distances (MixInput::known_distances); the mix must be the one without them, to the bit.
  const Matrix honest = testing::gaussianRows(9, 5000, 1.0f, 11);
  const std::vector<float> attack(5000, 0.3f);
  std::vector<std::span<const float>> rows = views(honest);
  const kernels::KnownDistances known(rows);
  rows.insert(rows.end(), 3, std::span<const float>(attack));  // three copies of one candidate
  for (const char* name : {"krum", "multikrum", "cs_plus_pt", "cs_plus_rpt", "cs_plus_st"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(measuresEveryPair(rule(name)));
    auto agg = makeAggregator(rule(name));
    ASSERT_TRUE(agg.has_value());
    std::vector<float> plain(5000), cached(5000);
    ASSERT_TRUE((*agg)->mix({rows, 3, {}}, plain).has_value());
    ASSERT_TRUE((*agg)->mix({rows, 3, {}, &known}, cached).has_value());
    EXPECT_EQ(plain, cached);
  }
  EXPECT_FALSE(measuresEveryPair(rule("nna")));
  EXPECT_FALSE(measuresEveryPair(rule("krum", {"nnm"})));  // nnm's outputs are new rows
}

// Attackers no distance tells apart, in kInsideDim dimensions: a pivot of ±1 (seeded signs),
// 12 honest rows at offsets of ±0.05 per coordinate (norm 1) and 3 attackers sharing the offset
// `attack(pivot coordinate)` per coordinate.
constexpr std::size_t kInsideDim = 400;
Matrix insideTheHonestDistances(std::uint64_t seed, float (*attack)(float)) {
  std::mt19937_64 rng(seed);
  const auto sign = [&] { return (rng() & 1) ? 1.0f : -1.0f; };
  Matrix m(16, std::vector<float>(kInsideDim));
  for (auto& x : m[0]) x = sign();
  for (std::size_t k = 1; k < 16; ++k) {
    for (std::size_t j = 0; j < kInsideDim; ++j)
      m[k][j] = m[0][j] + (k <= 12 ? 0.05f * sign() : attack(m[0][j]));
  }
  return m;
}

TEST(CsPlusPt, DropsACoherentBiasThatSitsInsideTheHonestDistances) {
  // ALIE's situation in many dimensions: a pivot of ±1 (seeded signs), 12 honest offsets of ±0.05
  // per coordinate (norm 1) and 3 attackers sharing one offset of 0.05 in every coordinate (norm
  // 1 too: no distance tells them apart, nothing is clipped). Around the offsets' mean the shared
  // offset is the one direction along which three rows agree, so it is the principal one; along
  // it the attackers sit at the top and the trim takes them out. The radial trim, along the
  // pivot (nearly orthogonal to the bias), cannot.
  const Matrix m = insideTheHonestDistances(7, [](float) { return 0.05f; });
  const std::vector<double> w(16, 1.0 / 16);
  const auto bias = [&](const char* name) {  // the step's component along the shared offset
    const auto r = mixWith(rule(name), m, 3, w);
    double s = 0;
    for (std::size_t j = 0; j < kInsideDim; ++j)
      s += (r.z[j] - m[0][j]) / std::sqrt(double(kInsideDim));
    return s;
  };
  const double plain = bias("cs_plus");
  EXPECT_NEAR(plain, 3.0 / 16, 0.05);  // the attackers' 3/16 of norm 1, plus honest noise
  EXPECT_GT(bias("cs_plus_rt"), plain / 2);
  EXPECT_LT(std::abs(bias("cs_plus_pt")), plain / 4);
  EXPECT_LT(std::abs(bias("cs_plus_rpt")), plain / 4);  // the bias lies across the pivot
  // The selected trim: along the pivot the rows' mean and trimmed mean nearly agree, along the
  // shared offset they differ by the attackers' pull, so that axis is the one trimmed.
  EXPECT_LT(std::abs(bias("cs_plus_st")), plain / 4);
}

TEST(CsPlusSt, TrimsAlongTheAxisWhereTheTrimMovesTheMixMost) {
  // The plane (CsPlusRt, CsPlusPt above): along u the clipped offsets' weighted mean is -0.048
  // and their trimmed mean 0 (a move of 0.048); along the principal direction 0.049325 and
  // 0.068965 (a move of 0.019640). The radial trim moves more: cs_plus_st is cs_plus_rt there.
  const auto r = mixWith(rule("cs_plus_st"), kPlane, 1, kPlaneW);
  EXPECT_NEAR(r.z[0], 1.0, 1e-6);
  EXPECT_NEAR(r.z[1], 0.076, 1e-6);
  // On a line both axes are the line: the trim's 1.05; b = 0 trims nothing.
  EXPECT_NEAR(mixWith(rule("cs_plus_st"), kLine, 1, kLineW).z[0], 1.05, 1e-6);
  EXPECT_NEAR(mixWith(rule("cs_plus_st"), kLine, 0, kLineW).z[0],
              mixWith(rule("cs_plus"), kLine, 0, kLineW).z[0], 1e-6);
}

TEST(CsPlusSt, DropsAShrinkOfThePivotThatSitsInsideTheHonestDistances) {
  // FOE's situation: 12 honest offsets of ±0.05 per coordinate around a pivot of ±1 and 3
  // attackers sharing the offset -0.05 c (a shrink by 5 %, norm 1 like every honest offset).
  // cs_plus moves the pivot 3/16 of that shrink; the selected trim takes nearly all of it out.
  const Matrix m = insideTheHonestDistances(9, [](float c) { return -0.05f * c; });
  const std::vector<double> w(16, 1.0 / 16);
  const auto shrink = [&](const char* name) {  // the step's component along -c/‖c‖
    const auto r = mixWith(rule(name), m, 3, w);
    double s = 0;
    for (std::size_t j = 0; j < kInsideDim; ++j)
      s -= (r.z[j] - m[0][j]) * m[0][j] / std::sqrt(double(kInsideDim));
    return s;
  };
  const double plain = shrink("cs_plus");
  EXPECT_NEAR(plain, 3.0 / 16, 0.05);
  EXPECT_LT(std::abs(shrink("cs_plus_rt")), plain / 4);
  EXPECT_LT(std::abs(shrink("cs_plus_st")), plain / 4);
}

TEST(CsPlus, ClipsAtTheDistanceBeyondWhichTwiceTheByzantineWeightLies) {
  // W = 0.1 per neighbour, self 0.6; b = 1: B = 0.1, weight 1 - 2B = 0.8 is reached exactly at
  // the row at distance 2 (0.6 + 0.1 + 0.1), so tau = 2: 0.1 * (1 + 2 + 3 * 2/3 + 10 * 2/10).
  const Matrix m{{0}, {1}, {2}, {3}, {10}};
  const std::vector<double> w{0, 0.1, 0.1, 0.1, 0.1};
  auto r = mixWith(rule("cs_plus"), m, 1, w);
  EXPECT_NEAR(r.z[0], 0.7, 1e-6);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 1, 1, 1}));  // clipped, still in the mix
  // Uneven weights: B = 0.15 (the heaviest edge), 1 - 2B = 0.7 is passed inside the row at
  // distance 2 (0.55 + 0.1 + 0.15 = 0.8), so tau is the previous distance, 1.
  EXPECT_NEAR(mixWith(rule("cs_plus"), m, 1, {0, 0.1, 0.15, 0.1, 0.1}).z[0], 0.45, 1e-6);
  // b = 0 clips nothing: plain gossip 0.1 * 16.
  EXPECT_NEAR(mixWith(rule("cs_plus"), m, 0, w).z[0], 1.6, 1e-6);
  // 2B above all but the self weight: tau = 0, the node stays where it is.
  r = mixWith(rule("cs_plus"), {{0}, {1}, {2}, {10}}, 2, {0, 0.25, 0.25, 0.25});
  EXPECT_FLOAT_EQ(r.z[0], 0.0f);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 0, 0, 0}));
}

TEST(CsPlusPt, RowsThatAllAgreeHaveNoAxisAndMixToThemselves) {
  // Every offset 0: no principal direction to trim along; the mix is the common row.
  for (const char* name : {"cs_plus_pt", "cs_plus_rpt", "cs_plus_st", "cs_plus_rt", "nna_rt"}) {
    const auto m = mixWith(rule(name), {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, 1);
    EXPECT_EQ(m.z, (std::vector<float>{1, 2, 3})) << name;
  }
}

TEST(Gts, KeepsTheClosestWeightUpToTotalMinusB) {
  // Default weights 1/4 (self 1/4); b = 1 keeps weight 3/4: self, 1 and 2 -> 0.25 * (1 + 2).
  auto r = mixWith(rule("gts"), {{0}, {1}, {2}, {10}}, 1);
  EXPECT_FLOAT_EQ(r.z[0], 0.75f);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 1, 0}));
  // Self 0.55, B = 0.15: room 0.85 = 0.55 + 0.1 + 0.15 + 0.05 of the row at distance 3.
  r = mixWith(rule("gts"), {{0}, {1}, {2}, {3}, {10}}, 1, {0, 0.1, 0.15, 0.1, 0.1});
  EXPECT_NEAR(r.z[0], 0.1 + 0.3 + 0.15, 1e-6);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 1, 1, 0}));
}

// The robust-gossip reference's boundary convention: the boundary row gets the excess of the
// cumulative weight over W − B, nothing on an exact hit.
TEST(Gts, TheReferencesConventionGivesTheBoundaryRowTheExcess) {
  // Equal weights: W − B = 3/4 is hit exactly at the row at distance 2, which keeps nothing:
  // self and 1 -> 0.25 — gts with b = 2.
  auto r = mixWith(rule("gts_excess"), {{0}, {1}, {2}, {10}}, 1);
  EXPECT_FLOAT_EQ(r.z[0], 0.25f);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 0, 0}));
  EXPECT_FLOAT_EQ(mixWith(rule("gts"), {{0}, {1}, {2}, {10}}, 2).z[0], 0.25f);
  // Self 0.4, W 0.2, 0.3, 0.1, B = 0.3: 0.4 + 0.2 fit; the row at distance 4 straddles 0.7 and
  // gets its excess 0.2 (gts: the 0.1 that fits) -> 0.2 + 0.8 (gts: 0.2 + 0.4).
  r = mixWith(rule("gts_excess"), {{0}, {1}, {4}, {10}}, 1, {0, 0.2, 0.3, 0.1});
  EXPECT_NEAR(r.z[0], 1.0, 1e-6);
  EXPECT_NEAR(mixWith(rule("gts"), {{0}, {1}, {4}, {10}}, 1, {0, 0.2, 0.3, 0.1}).z[0], 0.6, 1e-6);
  // b = 0: W − B = W is hit exactly at the farthest row, which keeps nothing, as in the
  // reference (gts keeps it: 3.25).
  EXPECT_FLOAT_EQ(mixWith(rule("gts_excess"), {{0}, {1}, {2}, {10}}, 0).z[0], 0.75f);
  EXPECT_FLOAT_EQ(mixWith(rule("gts"), {{0}, {1}, {2}, {10}}, 0).z[0], 3.25f);
}

TEST(Ios, DropsTheFarthestFromTheTrustedMeanBTimes) {
  // Mean 3.25: 10 is farthest; then mean 1: 2 is farther than 1 (the pivot is never dropped).
  auto r = mixWith(rule("ios"), {{0}, {1}, {2}, {10}}, 1);
  EXPECT_FLOAT_EQ(r.z[0], 1.0f);
  r = mixWith(rule("ios"), {{0}, {1}, {2}, {10}}, 2);
  EXPECT_FLOAT_EQ(r.z[0], 0.5f);
  EXPECT_EQ(r.report.kept, (std::vector<char>{1, 1, 0, 0}));
  // A far pivot stays: the farthest neighbour from the mean 3.25 is 0.
  EXPECT_NEAR(mixWith(rule("ios"), {{10}, {0}, {1}, {2}}, 1).z[0], 13.0 / 3.0, 1e-6);
  // b beyond the neighbours: the pivot alone.
  EXPECT_FLOAT_EQ(mixWith(rule("ios"), {{4}, {1}}, 3).z[0], 4.0f);
}

TEST(PreAggregators, NearestNeighbourMixing) {
  // b = 1: each row becomes the mean of its 2 nearest (itself first): 0.5, 0.5, 5.5.
  EXPECT_NEAR(mixWith(rule("mean", {"nnm"}), {{0}, {1}, {10}}, 1).z[0], 6.5 / 3.0, 1e-6);
}

TEST(PreAggregators, StaticClip) {
  EXPECT_FLOAT_EQ(mixWith(rule("mean", {"clip:1"}), {{0}, {3}, {0.5}}, 0).z[0], 0.5f);
}

TEST(PreAggregators, AdaptiveRobustClipping) {
  // n = 4, b = 1: k = floor(2/4 * 3) = 1 largest norm (100) clipped to the next (3).
  EXPECT_FLOAT_EQ(mixWith(rule("mean", {"arc"}), {{1}, {2}, {3}, {-100}}, 1).z[0], 0.75f);
}

TEST(PreAggregators, BucketingKeepsTheMeanAndComposes) {
  const Matrix m{{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  const auto z = mixWith(rule("mean", {"bucketing:2"}), m, 0).z;
  EXPECT_FLOAT_EQ(z[0], 4.0f);
  EXPECT_FLOAT_EQ(z[1], 5.0f);
  const auto r = mixWith(rule("nna", {"nnm", "bucketing:2"}), m, 1);
  EXPECT_EQ(r.report.kept[0], 1);  // the pivot's bucket is always kept by nna
}

TEST(Factory, RejectsUnknownNamesAndBadParameters) {
  EXPECT_FALSE(kRules.parse("avg").has_value());  // names are refused where they are parsed
  EXPECT_THAT(makeAggregator({.rule = RuleId(64)}).error(), HasSubstr("unknown rule id 64"));
  // Parsed where the text enters (robust/pre_spec.h); a spec built in code is checked again.
  EXPECT_THAT(parsePreSpec("median").error(), HasSubstr("unknown pre-aggregator"));
  EXPECT_THAT(parsePreSpec("clip").error(), HasSubstr("needs a parameter"));
  EXPECT_THAT(parsePreSpec("clip:x").error(), HasSubstr("number > 0"));
  EXPECT_THAT(parsePreSpec("nnm:2").error(), HasSubstr("takes no parameter"));
  EXPECT_THAT(parsePreSpec("bucketing:1.5").error(), HasSubstr("whole"));
  AggregatorConfig half_bucket = rule("nna");
  half_bucket.pre = {{.kind = PreKind::kBucketing, .param = 1.5}};
  EXPECT_THAT(makeAggregator(half_bucket).error(), HasSubstr("whole"));
  EXPECT_EQ(preSpecText(parsePreSpec("clip:2.5").value()), "clip:2.5");
  EXPECT_EQ((*makeAggregator(rule("cwtm", {"nnm"})))->name(), "nnm+cwtm");
}

TEST(Mix, InputErrorsAreValuesNotCrashes) {
  auto agg = *makeAggregator(rule("nna"));
  std::vector<float> z(2);
  const Matrix uneven{{0, 0}, {1}};
  EXPECT_THAT(agg->mix({views(uneven), 0, {}}, z).error(), HasSubstr("row 1 has length 1"));
  const Matrix bad_pivot{{kNan, 0}, {1, 1}};
  EXPECT_THAT(agg->mix({views(bad_pivot), 0, {}}, z).error(), HasSubstr("pivot holds NaN"));
  const Matrix ok{{0, 0}, {1, 1}};
  EXPECT_THAT(agg->mix({views(ok), 0, std::vector<double>{1}}, z).error(),
              HasSubstr("1 weights for 2"));
  EXPECT_THAT(agg->mix({{}, 0, {}}, z).error(), HasSubstr("no pivot"));
}

}  // namespace
}  // namespace phalanx::robust
