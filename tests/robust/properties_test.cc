// Randomized properties with fixed seeds (printed on failure): robustness bounds and
// permutation invariance for every rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/vector_ops.h"
#include "robust/aggregator.h"
#include "tests/support/rows.h"

namespace phalanx::robust {
namespace {

using testing::Matrix;
using testing::views;

constexpr std::size_t kDim = 40;

// Honest rows around a pivot, then b adversarial rows: far, near or NaN, at random places.
Matrix attacked(std::size_t honest, std::size_t b, std::uint64_t seed) {
  Matrix m = testing::gaussianRows(honest, kDim, 1.0f, seed);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < b; ++i) {
    std::vector<float> row(kDim);
    switch (rng() % 3) {
      case 0:
        std::fill(row.begin(), row.end(), float(1e3 + double(rng() % 1000)));
        break;
      case 1:
        row = m[0];
        row[rng() % kDim] += 0.01f;
        break;
      default:
        row[rng() % kDim] = std::numeric_limits<float>::quiet_NaN();
    }
    const auto at = 1 + rng() % m.size();  // anywhere after the pivot
    m.insert(m.begin() + std::ptrdiff_t(at), row);
  }
  return m;
}

std::vector<float> mixed(const AggregatorConfig& c, const Matrix& m, std::size_t b) {
  auto agg = *makeAggregator(c);
  std::vector<float> z(m[0].size());
  const auto v = views(m);
  auto r = agg->mix({v, b, {}}, z);
  EXPECT_TRUE(r.has_value()) << r.error();
  return z;
}

TEST(Properties, NnaStaysWithinTheFarthestHonestDistanceOfThePivot) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const std::size_t honest = 5 + seed % 6, b = 1 + seed % 3;
    const Matrix clean = testing::gaussianRows(honest, kDim, 1.0f, seed);
    double radius = 0;
    for (const auto& r : clean)
      radius = std::max(radius, std::sqrt(kernels::squaredDistance(r, clean[0])));
    const Matrix m = attacked(honest, b, seed);
    const auto z = mixed({.rule = RuleId::kNna}, m, b);
    EXPECT_LE(std::sqrt(kernels::squaredDistance(z, m[0])), radius * (1 + 1e-6));
  }
}

TEST(Properties, TrimmedMeanStaysInsideTheHonestRange) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const std::size_t honest = 6 + seed % 5, b = 1 + seed % 2;
    const Matrix clean = testing::gaussianRows(honest, kDim, 1.0f, seed);
    const auto z = mixed({.rule = RuleId::kCwtm}, attacked(honest, b, seed), b);
    for (std::size_t j = 0; j < kDim; ++j) {
      float lo = clean[0][j], hi = clean[0][j];
      for (const auto& r : clean) {
        lo = std::min(lo, r[j]);
        hi = std::max(hi, r[j]);
      }
      // Near-pivot copies lie within 0.01 of an honest value.
      EXPECT_GE(z[j], lo - 0.011f);
      EXPECT_LE(z[j], hi + 0.011f);
    }
  }
}

TEST(Properties, PermutingPeersDoesNotChangeAnyRule) {
  const std::vector<AggregatorConfig> configs{
      {.rule = RuleId::kNna},
      {.rule = RuleId::kMean},
      {.rule = RuleId::kMetropolis},
      {.rule = RuleId::kCwtm},
      {.rule = RuleId::kCwmed},
      {.rule = RuleId::kGm},
      {.rule = RuleId::kKrum},
      {.rule = RuleId::kMultikrum},
      {.rule = RuleId::kCc, .tau = 1.0, .iters = 3},
      {.rule = RuleId::kClippedGossip},
      {.rule = RuleId::kClippedGossipHe},
      {.rule = RuleId::kCsPlus},
      {.rule = RuleId::kCsPlusRt},
      {.rule = RuleId::kCsPlusPt},
      {.rule = RuleId::kCsPlusRpt},
      {.rule = RuleId::kCsPlusSt},
      {.rule = RuleId::kNnaRt},
      {.rule = RuleId::kGts},
      {.rule = RuleId::kIos},
      {.rule = RuleId::kGtsExcess},
      {.rule = RuleId::kNna, .pre = {{.kind = PreKind::kNnm}}},
      {.rule = RuleId::kCwtm, .pre = {{.kind = PreKind::kArc}}},
      {.rule = RuleId::kMean, .pre = {{.kind = PreKind::kClip, .param = 2}}}};
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const Matrix m = testing::gaussianRows(9, kDim, 1.0f, seed);
    Matrix shuffled = m;
    std::mt19937_64 rng(seed);
    std::shuffle(shuffled.begin() + 1, shuffled.end(), rng);  // the pivot stays first
    for (const auto& c : configs) {
      SCOPED_TRACE(::testing::Message()
                   << kRules.name(c.rule) << " pre " << c.pre.size() << " seed " << seed);
      const auto a = mixed(c, m, 2), b = mixed(c, shuffled, 2);
      for (std::size_t j = 0; j < kDim; ++j) EXPECT_NEAR(a[j], b[j], 1e-5);
    }
  }
}

TEST(Properties, NoRuleLetsNonFiniteValuesThrough) {
  for (const char* name : {"nna", "mean", "metropolis", "cwtm", "cwmed", "gm", "krum", "multikrum",
                           "clipped_gossip", "clipped_gossip_he", "cs_plus", "gts", "ios", "nna_rt",
                           "cs_plus_rt", "cs_plus_pt", "cs_plus_rpt", "cs_plus_st", "gts_excess"}) {
    SCOPED_TRACE(name);
    Matrix m = testing::gaussianRows(8, kDim, 1.0f, 3);
    m[2][5] = std::numeric_limits<float>::quiet_NaN();
    m[6][0] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(kernels::allFinite(mixed({.rule = kRules.parse(name).value()}, m, 2)));
  }
}

}  // namespace
}  // namespace phalanx::robust
