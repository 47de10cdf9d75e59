// Hand-computed cases for every attack (ALGORITHMS.md §4) and the exact line search.
#include "robust/attacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "robust/normal.h"
#include "robust/pre_aggregators.h"
#include "tests/support/rows.h"

namespace phalanx::robust {
namespace {

using ::testing::HasSubstr;
using testing::Matrix;
using testing::views;

const Matrix kHonest{{1, 2}, {3, 4}};  // μ = (2, 3), σ = (√2, √2)

std::vector<float> craft(AttackConfig c, const Matrix& honest = kHonest,
                         const TargetView* target = nullptr) {
  auto attack = makeAttack(c);
  EXPECT_TRUE(attack.has_value()) << attack.error();
  std::vector<float> out(honest.empty() ? 2 : honest[0].size());
  const auto v = views(honest);
  auto ok = (*attack)->craft({v, target}, out);
  EXPECT_TRUE(ok.has_value()) << ok.error();
  return out;
}

AttackConfig named(std::string_view name) {
  AttackConfig c;
  c.attack = kAttacks.parse(name).value();
  return c;
}

TEST(Attacks, SignflipAndIpm) {
  EXPECT_EQ(craft(named("signflip")), (std::vector<float>{-2, -3}));
  EXPECT_EQ(craft(named("ipm")), (std::vector<float>{-4, -6}));  // tau = 2 by default
  AttackConfig c = named("ipm");
  c.tau = 0.5;
  EXPECT_EQ(craft(c), (std::vector<float>{-1, -1.5}));
}

TEST(Attacks, FoeShrinksTheHonestMean) {
  AttackConfig c = named("foe");
  c.tau = 0.1;
  auto v = craft(c);  // 0.9 μ
  EXPECT_FLOAT_EQ(v[0], 1.8f);
  EXPECT_FLOAT_EQ(v[1], 2.7f);
  v = craft(named("foe"));  // tau = 0.1 by default
  EXPECT_FLOAT_EQ(v[0], 1.8f);
}

TEST(Attacks, SpectralPushesAlongTheFiedlerVector) {
  // Honest x = 0, 1, 2 on a path, v = (-1, 0, 1)/√2; target 0: d = v_0 Σ v_k x_k = -1.
  const Matrix honest{{0}, {1}, {2}};
  const std::vector<double> fiedler{-1 / std::sqrt(2.0), 0, 1 / std::sqrt(2.0)};
  const std::vector<std::span<const float>> around{honest[1]};
  const std::vector<double> w{1.0 / 3};
  TargetView view{.target = honest[0],
                  .honest_neighbours = around,
                  .honest_weights = w,
                  .byzantine_weight = 1.0 / 3,
                  .byzantine_count = 1,
                  .budget = 1,
                  .fiedler = fiedler[0]};
  AttackConfig c = named("spectral");
  c.tau = 3;
  auto attack = makeAttack(c);
  ASSERT_TRUE(attack.has_value()) << attack.error();
  EXPECT_TRUE((*attack)->perTarget());
  std::vector<float> out(1);
  const auto v = views(honest);
  ASSERT_TRUE((*attack)->craft({v, &view, fiedler}, out));
  EXPECT_FLOAT_EQ(out[0], -3.0f);
  // Searched against the mean, the damage grows with tau: every step of lineMaximize expands.
  c.tau.reset();
  c.target.rule = RuleId::kMean;
  attack = makeAttack(c);
  ASSERT_TRUE((*attack)->craft({v, &view, fiedler}, out));
  EXPECT_FLOAT_EQ(out[0], float(-(std::pow(2.0, 15) - 1)));
  // Against cs_plus (b = 1 with one Byzantine neighbour) it is clipped, so it cannot gain
  // without bound: the search stops at a finite tau.
  c.target.rule = RuleId::kCsPlus;
  attack = makeAttack(c);
  ASSERT_TRUE((*attack)->craft({v, &view, fiedler}, out));
  EXPECT_LT(std::abs(out[0]), 1e6f);
  // Missing pieces are errors.
  EXPECT_THAT((*attack)->craft({v, nullptr, fiedler}, out).error(), HasSubstr("target's view"));
  EXPECT_THAT((*attack)->craft({v, &view, {}}, out).error(), HasSubstr("Fiedler"));
  view.byzantine_count = 0;
  EXPECT_THAT((*attack)->craft({v, &view, fiedler}, out).error(), HasSubstr("Byzantine neighbour"));
}

TEST(Attacks, AlieWithTauOrZ) {
  auto v = craft(named("alie"));  // μ + 1.5 σ
  EXPECT_NEAR(v[0], 2 + 1.5 * std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(v[1], 3 + 1.5 * std::sqrt(2.0), 1e-6);
  // n = 26, f = 5: s = floor(14) - 5 = 9, z = Φ⁻¹(12/21) = 0.18001236979270493.
  AttackConfig c = named("alie");
  c.alie_z = true;
  c.n = 26;
  c.f = 5;
  v = craft(c);
  EXPECT_NEAR(v[0], 2 + 0.18001236979270493 * std::sqrt(2.0), 1e-6);
  EXPECT_THAT(makeAttack({.attack = AttackId::kAlie, .alie_z = true, .n = 3, .f = 3}).error(),
              HasSubstr("n > f"));
}

TEST(Attacks, AlieNeedsTwoHonestVectors) {
  auto attack = *makeAttack(named("alie"));
  const Matrix one{{1, 2}};
  std::vector<float> out(2);
  EXPECT_THAT(attack->craft({views(one)}, out).error(), HasSubstr("at least 2 honest vectors"));
  const Matrix wrong{{1, 2, 3}, {1, 2, 3}};
  EXPECT_THAT(attack->craft({views(wrong)}, out).error(), HasSubstr("length 3, expected 2"));
}

TEST(Attacks, MimicCopiesTheChosenHonestVector) {
  AttackConfig c = named("mimic");
  c.mimic = 1;
  EXPECT_EQ(craft(c), (std::vector<float>{3, 4}));
  c.mimic = 5;
  auto attack = *makeAttack(c);
  std::vector<float> out(2);
  EXPECT_FALSE(attack->craft({views(kHonest)}, out).has_value());
}

TEST(Attacks, DissensusPerTarget) {
  // x_i = 1; honest neighbours 3, 5 with W = 0.25; Byzantine weight 0.5; eps = 1.5:
  // 1 - 1.5 * (0.25*2 + 0.25*4) / 0.5 = -3.5.
  const Matrix neighbours{{3}, {5}};
  const std::vector<float> target{1};
  const std::vector<double> w{0.25, 0.25};
  const auto nv = views(neighbours);
  const TargetView view{target, nv, w, 0.5};
  auto attack = *makeAttack(named("dissensus"));
  EXPECT_TRUE(attack->perTarget());
  std::vector<float> out(1);
  ASSERT_TRUE(attack->craft({{}, &view}, out));
  EXPECT_FLOAT_EQ(out[0], -3.5f);
  EXPECT_THAT(attack->craft({{}, nullptr}, out).error(), HasSubstr("needs the target's view"));
}

// opt_dissensus: dissensus's eps line-searched per target against the rule, as the robust-gossip
// reference searches it (the same search as spectral's).
TEST(Attacks, OptDissensusSearchesItsFactorAgainstTheRule) {
  // x_i = 1; honest neighbours 3, 5 with W = 0.25; Byzantine weight 0.5: one unit of eps moves
  // the vector by -(0.25*2 + 0.25*4) / 0.5 = -3.
  const Matrix neighbours{{3}, {5}};
  const std::vector<float> target{1};
  const std::vector<double> w{0.25, 0.25};
  const auto nv = views(neighbours);
  TargetView view{.target = target,
                  .honest_neighbours = nv,
                  .honest_weights = w,
                  .byzantine_weight = 0.5,
                  .byzantine_count = 1,
                  .budget = 1};
  AttackConfig c = named("opt_dissensus");
  c.target.rule = RuleId::kMean;
  auto attack = makeAttack(c);
  ASSERT_TRUE(attack.has_value()) << attack.error();
  EXPECT_TRUE((*attack)->perTarget());
  EXPECT_EQ((*attack)->name(), "opt_dissensus");
  std::vector<float> out(1);
  // Against the mean the damage grows with eps: every step of lineMaximize expands (16
  // evaluations from 0 by doubling steps: eps = 2^15 - 1).
  ASSERT_TRUE((*attack)->craft({{}, &view}, out));
  EXPECT_FLOAT_EQ(out[0], float(1.0 - 3.0 * (std::pow(2.0, 15) - 1)));
  // cs_plus clips the copy (b = 1, one Byzantine neighbour): the search stops at a finite eps.
  c.target.rule = RuleId::kCsPlus;
  attack = makeAttack(c);
  ASSERT_TRUE((*attack)->craft({{}, &view}, out));
  EXPECT_LT(std::abs(out[0]), 1e6f);
  EXPECT_THAT((*attack)->craft({{}, nullptr}, out).error(), HasSubstr("needs the target's view"));
  view.byzantine_count = 0;
  EXPECT_THAT((*attack)->craft({{}, &view}, out).error(), HasSubstr("no Byzantine neighbour"));
}

TEST(Attacks, GaussianIsSeededWithTheRequestedSpread) {
  AttackConfig c = named("gaussian");
  c.sigma = 2.0;
  c.seed = 9;
  const Matrix big = testing::gaussianRows(2, 100000, 1.0f, 1);
  const auto a = craft(c, big), b = craft(c, big);
  EXPECT_EQ(a, b);
  double sum = 0, sq = 0;
  for (float v : a) {
    sum += v;
    sq += double(v) * v;
  }
  EXPECT_NEAR(sum / 1e5, 0.0, 0.03);
  EXPECT_NEAR(std::sqrt(sq / 1e5), 2.0, 0.03);
}

TEST(Attacks, GaussianScaledToTheHonestMean) {
  // σ = ‖μ‖/√d; every honest row is 3 in all coordinates, so σ = 3.
  AttackConfig c = named("gaussian");
  c.scale_to_mean = true;
  const Matrix honest(2, std::vector<float>(100000, 3.0f));
  double sq = 0;
  for (float v : craft(c, honest)) sq += double(v) * v;
  EXPECT_NEAR(std::sqrt(sq / 1e5), 3.0, 0.05);
}

TEST(Attacks, PoisonValues) {
  for (float v : craft(named("nan"))) EXPECT_TRUE(std::isnan(v));
  for (float v : craft(named("inf"))) EXPECT_TRUE(std::isinf(v));
  EXPECT_EQ(craft(named("zero")), (std::vector<float>{0, 0}));
  EXPECT_EQ(craft(named("huge")), (std::vector<float>{kHugeValue, kHugeValue}));
}

TEST(Attacks, TheTableListsEveryAttackOnceAndEachBuilds) {
  for (std::size_t i = 0; i < kAttacks.entries.size(); ++i) {
    const auto& e = kAttacks.entries[i];
    EXPECT_EQ(int(e.value), int(i)) << e.name;  // one entry per id, in order
    auto made = makeAttack({.attack = e.value});
    ASSERT_TRUE(made.has_value()) << e.name;
    EXPECT_EQ((*made)->name(), e.name);
  }
  EXPECT_FALSE(kAttacks.parse("confuse").has_value());
  EXPECT_THAT(makeAttack({.attack = AttackId(99)}).error(), HasSubstr("unknown attack id 99"));
}

TEST(LineSearch, FollowsTheExactExpandThenContractRecipe) {
  // Replayed by hand from ALGORITHMS.md §4 for F = -(tau - 37)^2, 20 evaluations:
  // expand 0 -> 10 -> 30, overshoot at 70; contract with delta 32, 25.6, ... ends at 43.1072.
  std::vector<double> asked;
  const double best = lineSearch(
      [&](double t) {
        asked.push_back(t);
        return -(t - 37) * (t - 37);
      },
      20);
  EXPECT_NEAR(best, 43.1072, 1e-9);
  ASSERT_EQ(asked.size(), 20u);
  EXPECT_EQ((std::vector<double>(asked.begin(), asked.begin() + 5)),
            (std::vector<double>{0, 10, 30, 70, 62}));
}

TEST(LineSearch, ReferenceSearchContractsBothWays) {
  std::vector<double> asked;
  const double best = lineMaximize([&](double t) {
    asked.push_back(t);
    return -(t - 0.3) * (t - 0.3);
  });
  ASSERT_EQ(asked.size(), 16u);
  // 1 is worse than 0: back by 0.8 to 0.2 (better); back by 0.64 below 0, halved up to 0.04;
  // behind the best: forward by 0.512; past it: back by 0.4096.
  const std::vector<double> first{0, 1, 0.2, 0.04, 0.552, 0.1424};
  for (std::size_t k = 0; k < first.size(); ++k) EXPECT_NEAR(asked[k], first[k], 1e-12) << k;
  EXPECT_NEAR(best, 0.3, 0.02);
}

TEST(LineSearch, OptimizedAttackOnTheMeanKeepsExpanding) {
  // Against the mean the damage grows with tau, so all 19 steps expand: 10 * (2^19 - 1).
  AttackConfig c = named("opt_ipm");
  c.f = 2;
  c.target.rule = RuleId::kMean;
  const Matrix honest{{1, 1}, {1, 1}, {1, 1}};
  const auto v = craft(c, honest);
  EXPECT_FLOAT_EQ(v[0], float(-10.0 * (std::pow(2.0, 19) - 1)));
}

TEST(LineSearch, OptimizedFoeAgainstTheMeanKeepsExpanding) {
  AttackConfig c = named("opt_foe");
  c.f = 2;
  c.target.rule = RuleId::kMean;
  const Matrix honest{{1, 2}, {1, 2}, {1, 2}};
  const auto v = craft(c, honest);  // (1 - tau) μ; lineMaximize: 15 doublings from 1
  const double tau = std::pow(2.0, 15) - 1;
  EXPECT_FLOAT_EQ(v[0], float(1 - tau));
  EXPECT_FLOAT_EQ(v[1], float(2 * (1 - tau)));
}

// Six honest models around 5 (model space), 20 coordinates.
Matrix modelsAroundFive() {
  Matrix honest = testing::gaussianRows(6, 20, 0.3f, 4);
  for (auto& row : honest) {
    for (float& x : row) x += 5.0f;
  }
  return honest;
}

// `name` sending two copies against NNA told b = 2.
AttackConfig twoCopiesAgainstNna(std::string_view name) {
  AttackConfig c = named(name);
  c.f = 2;
  c.target.rule = RuleId::kNna;
  c.target_b = 2;
  return c;
}

TEST(LineSearch, OptimizedFoeAgainstNnaIsKeptByNna) {
  // Honest models around 5 (model space): NNA drops a far (1 - tau) μ, so the best tau found
  // is one whose vector NNA keeps, and it moves the mix off μ towards 0.
  const Matrix honest = modelsAroundFive();
  const auto v = craft(twoCopiesAgainstNna("opt_foe"), honest);
  std::vector<std::span<const float>> rows(honest.begin(), honest.end());
  rows.insert(rows.end(), 2, std::span<const float>(v));
  auto nna = makeAggregator({.rule = RuleId::kNna});
  std::vector<float> z(20);
  auto report = (*nna)->mix({rows, 2, {}}, z);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->kept[6], 1) << "the attack vector is excluded";
  std::vector<float> mean(20);
  meanAndStd(views(honest), mean, {});
  EXPECT_LT(v[0], mean[0]);  // shrunk towards 0
  EXPECT_GT(v[0], 0.0f);
}

TEST(LineSearch, EmpireMovesTheAverageOfEveryHonestPivotsMix) {
  // The MoNNA reference's FOE: (1 - tau) μ with tau from lineMaximize of ‖(1/h) Σ_i NNA_i − μ‖,
  // NNA_i pivoting on honest row i over every honest row and the f copies.
  AttackConfig c = twoCopiesAgainstNna("empire");
  const Matrix honest = modelsAroundFive();
  std::vector<float> mean(20);
  meanAndStd(views(honest), mean, {});
  auto nna = makeAggregator({.rule = RuleId::kNna});
  const auto F = [&](double tau) {
    std::vector<float> attack(20), z(20);
    for (std::size_t k = 0; k < 20; ++k) attack[k] = mean[k] + float(tau) * -mean[k];
    std::vector<double> average(20, 0.0);
    for (std::size_t i = 0; i < honest.size(); ++i) {
      std::vector<std::span<const float>> rows{honest[i]};
      for (std::size_t j = 0; j < honest.size(); ++j) {
        if (j != i) rows.push_back(honest[j]);
      }
      rows.insert(rows.end(), 2, std::span<const float>(attack));
      EXPECT_TRUE((*nna)->mix({rows, 2, {}}, z).has_value());
      for (std::size_t k = 0; k < 20; ++k) average[k] += z[k];
    }
    double squared = 0;
    for (std::size_t k = 0; k < 20; ++k) {
      const double gap = average[k] / 6.0 - mean[k];
      squared += gap * gap;
    }
    return std::sqrt(squared);
  };
  const double tau = lineMaximize(F);
  const auto v = craft(c, honest);
  for (std::size_t k = 0; k < 20; ++k) EXPECT_FLOAT_EQ(v[k], mean[k] + float(tau) * -mean[k]) << k;
  EXPECT_GT(tau, 0.0);
  // opt_foe searching against every pivot is empire.
  AttackConfig every = c;
  every.attack = AttackId::kOptFoe;
  every.every_pivot = true;
  EXPECT_EQ(craft(every, honest), v);
  // Against a rule with no pivot (the mean) the objective is opt_foe's: the same vector.
  c.target.rule = RuleId::kMean;
  AttackConfig foe = c;
  foe.attack = AttackId::kOptFoe;
  EXPECT_EQ(craft(c, honest), craft(foe, honest));
}

TEST(LineSearch, OptimizedAlieAgainstNnaStaysWhereItIsKept) {
  AttackConfig c = named("opt_alie");
  c.f = 2;
  c.target.rule = RuleId::kNna;
  c.target_b = 2;
  const Matrix honest = testing::gaussianRows(6, 20, 1.0f, 4);
  const auto v = craft(c, honest);
  // NNA ignores far vectors, so the search cannot profit from an enormous tau.
  std::vector<float> mean(20), sd(20);
  meanAndStd(views(honest), mean, sd);
  EXPECT_LT(std::abs(v[0] - mean[0]), 100 * sd[0]);
}

TEST(LineSearch, TheSearchPutsItsCopiesNotFInTheMix) {
  // copies: the attack rows of the mix searched against (the most Byzantine neighbours of an
  // honest peer); f alone when unset. f = 6 with one copy searches as f = 1 does.
  const Matrix honest = testing::gaussianRows(6, 40, 1.0f, 11);
  for (const char* rule : {"nna", "cwtm"}) {
    AttackConfig one = named("opt_alie");
    one.f = 1;
    one.target.rule = kRules.parse(rule).value();
    one.target_b = 2;
    AttackConfig many = one;
    many.f = 6;
    AttackConfig counted = many;
    counted.copies = 1;
    EXPECT_EQ(craft(counted, honest), craft(one, honest)) << rule;
    EXPECT_NE(craft(many, honest), craft(one, honest)) << rule;
  }
}

TEST(LineSearch, CoordinateRuleShortcutChoosesTheSameTauAsTheFullRule) {
  // Against cwtm / cwmed the search sorts the honest values once; bucketing:1 (every row its
  // own bucket, shuffled) leaves those rules' output unchanged but forces the full path.
  const Matrix honest = testing::gaussianRows(21, 300, 1.0f, 9);
  for (const char* attack : {"opt_alie", "opt_ipm"}) {
    for (const char* rule : {"cwtm", "cwmed"}) {
      AttackConfig fast = named(attack);
      fast.f = 5;
      fast.target.rule = kRules.parse(rule).value();
      fast.target_b = 5;
      AttackConfig full = fast;
      full.target.pre = {{.kind = PreKind::kBucketing, .param = 1}};
      EXPECT_EQ(craft(fast, honest), craft(full, honest)) << attack << " against " << rule;
    }
  }
}

// nnm on rows followed by `copies` copies of extra, the slow way.
std::vector<std::vector<float>> nnmOfRowsAndCopies(const Matrix& rows,
                                                   const std::vector<float>& extra,
                                                   std::size_t copies, std::size_t b) {
  std::vector<std::span<const float>> all(rows.begin(), rows.end());
  all.insert(all.end(), copies, std::span<const float>(extra));
  auto nnm = makePreAggregator({.kind = PreKind::kNnm}, 1);
  EXPECT_TRUE(nnm.has_value());
  const std::vector<double> weights(all.size(), 1.0 / double(all.size()));
  return (*nnm)->apply(all, weights, b).rows;
}

TEST(NnmWithCopies, EqualsNnmOnTheRowsAndCopies) {
  const Matrix rows = testing::gaussianRows(9, 50, 1.0f, 3);
  std::vector<float> near(rows[2]), far(50, 40.0f), midway(50);
  for (std::size_t j = 0; j < 50; ++j) {
    near[j] += 0.01f;
    midway[j] = 0.5f * (rows[0][j] + rows[1][j]);
  }
  // Extras near one row, far from all, between two, and equal to a row (a tie at distance 0).
  for (const auto& extra : {near, far, midway, rows[4]}) {
    for (const auto& [copies, b] :
         {std::pair<std::size_t, std::size_t>{1, 1}, {3, 3}, {4, 2}, {6, 10}, {2, 0}}) {
      NnmWithCopies fast(views(rows), copies, b);
      const auto got = fast.apply(extra);
      const auto want = nnmOfRowsAndCopies(rows, extra, copies, b);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t k = 0; k < want.size(); ++k) {
        for (std::size_t j = 0; j < 50; ++j) {
          ASSERT_NEAR(got[k][j], want[k][j], 1e-5f * (1 + std::abs(want[k][j])))
              << "row " << k << " coordinate " << j << " copies " << copies << " b " << b;
        }
      }
    }
  }
  // Duplicated rows tie with each other and, at distance 0, with the copies: rows first.
  const Matrix twins{{1, 0}, {1, 0}, {0, 1}, {5, 5}};
  NnmWithCopies fast(views(twins), 2, 2);
  for (const auto& extra : {std::vector<float>{1, 0}, std::vector<float>{0, 1}}) {
    const auto got = fast.apply(extra);  // the cached sums are reused across calls
    const auto want = nnmOfRowsAndCopies(twins, extra, 2, 2);
    for (std::size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(std::vector<float>(got[k].begin(), got[k].end()), want[k]) << "row " << k;
    }
  }
}

TEST(LineSearch, NnmShortcutChoosesTheSameVectorAsTheFullPipeline) {
  // bucketing:1 in front (every row its own bucket, shuffled) leaves nnm's neighbour sets
  // unchanged but forces the full path; sums may differ in the last bits.
  const Matrix honest = testing::gaussianRows(16, 300, 1.0f, 11);
  for (const char* attack : {"opt_alie", "opt_ipm"}) {
    for (const char* rule : {"cwtm", "mean", "nna"}) {
      AttackConfig fast = named(attack);
      fast.f = 4;
      fast.target = {.rule = kRules.parse(rule).value(), .pre = {{.kind = PreKind::kNnm}}};
      fast.target_b = 4;
      AttackConfig full = fast;
      full.target.pre = {{.kind = PreKind::kBucketing, .param = 1}, {.kind = PreKind::kNnm}};
      const auto a = craft(fast, honest), b = craft(full, honest);
      for (std::size_t j = 0; j < a.size(); ++j) {
        ASSERT_NEAR(a[j], b[j], 1e-4f * (1 + std::abs(b[j]))) << attack << " against nnm+" << rule;
      }
    }
  }
}

TEST(Normal, QuantilesMatchKnownValues) {
  EXPECT_NEAR(inverseNormalCdf(0.5), 0.0, 1e-15);
  EXPECT_NEAR(inverseNormalCdf(0.975), 1.9599639845400536, 1e-12);
  EXPECT_NEAR(inverseNormalCdf(0.025), -1.9599639845400536, 1e-12);
  EXPECT_NEAR(inverseNormalCdf(1e-10), -6.361340902404056, 1e-9);
  EXPECT_TRUE(std::isnan(inverseNormalCdf(0.0)));
  EXPECT_TRUE(std::isnan(inverseNormalCdf(1.0)));
}

}  // namespace
}  // namespace phalanx::robust
