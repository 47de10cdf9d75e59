#include "kernels/batch_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/row_distances.h"
#include "kernels/vector_ops.h"
#include "tests/support/rows.h"

namespace phalanx::kernels {
namespace {

using testing::gaussianRows;
using testing::views;

TEST(BatchOps, DistancesMatchNaiveOnSizesAcrossBlockBoundaries) {
  for (std::size_t d : {1u, 7u, 4096u, 4097u, 20000u}) {
    SCOPED_TRACE(d);
    const auto m = gaussianRows(5, d, 1.0f, d);
    const auto rows = views(m);
    std::vector<double> to(5), pair(25), norms(5);
    squaredDistancesTo(m[0], rows, to);
    pairwiseSquaredDistances(rows, pair);
    squaredNorms(rows, norms);
    for (std::size_t i = 0; i < 5; ++i) {
      double naive_norm = 0;
      for (float v : m[i]) naive_norm += double(v) * v;
      EXPECT_NEAR(norms[i], naive_norm, 1e-9 * naive_norm);
      for (std::size_t j = 0; j < 5; ++j) {
        double naive = 0;
        for (std::size_t c = 0; c < d; ++c) naive += std::pow(double(m[i][c]) - m[j][c], 2);
        // Float sums over 4096-element runs: relative error about 1e-6 (more without SIMD).
        EXPECT_NEAR(pair[i * 5 + j], naive, 1e-5 * naive + 1e-12);
        if (i == 0) {
          EXPECT_NEAR(to[j], naive, 1e-5 * naive + 1e-12);
        }
      }
    }
  }
}

TEST(BatchOps, DotsAreDotBitForBitWhateverTheRowCount) {
  // Groups of sixteen and of eight, a padded last group, a single row left, and empty rows;
  // lengths below, at and around the vector kernel's blocks of eight coordinates after the
  // first.
  for (std::size_t n : {0u, 1u, 2u, 7u, 8u, 9u, 16u, 17u, 26u, 33u}) {
    for (std::size_t d : {0u, 1u, 5u, 8u, 9u, 10u, 17u, 79510u}) {
      SCOPED_TRACE(::testing::Message() << n << " rows of " << d);
      const auto m = gaussianRows(n, d, 3.0f, n * 131 + d);
      const auto y = gaussianRows(1, d, 0.5f, d + 7)[0];
      std::vector<double> got(n);
      dots(views(m), y, got);
      for (std::size_t k = 0; k < n; ++k) {
        const double want = dot(m[k], y);
        EXPECT_EQ(std::memcmp(&got[k], &want, sizeof want), 0) << k << ": " << got[k];
      }
    }
  }
}

TEST(BatchOps, DotsOfOneBufferRepeatedAreDotBitForBit) {
  // The principal trim's dots inside an attacker's line search: f spans of one candidate among
  // the honest rows, summed once.
  const auto m = gaussianRows(12, 4099, 2.0f, 11);
  const auto y = gaussianRows(1, 4099, 0.5f, 12)[0];
  std::vector<std::span<const float>> rows;
  for (std::size_t k = 0; k < 10; ++k) rows.push_back(m[k]);
  for (std::size_t k = 0; k < 9; ++k) rows.push_back(m[10]);
  rows.insert(rows.begin() + 3, m[11]);
  rows.push_back(m[11]);
  std::vector<double> got(rows.size());
  dots(rows, y, got);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const double want = dot(rows[k], y);
    EXPECT_EQ(std::memcmp(&got[k], &want, sizeof want), 0) << k << ": " << got[k];
  }
}

TEST(BatchOps, RunDistancesFollowTheirStatedOrderWhateverTheRowCount) {
  // detail::runDistances's order by hand: sixteen lanes with one fused multiply-add per
  // coordinate below the last multiple of 16, the rest on lane 0, the lanes summed from 0 up.
  // The pairwise matrix measures up to eight rows against one in a call, single distances one
  // row at a time: both must give each row this value.
  if (!detail::vectorRunDistances()) GTEST_SKIP() << "no AVX-512 here";
  for (std::size_t n : {0u, 1u, 15u, 16u, 17u, 100u, 4095u, 4096u}) {
    const auto m = gaussianRows(9, n, 2.0f, n + 5);
    std::vector<const float*> a;
    for (std::size_t k = 0; k < 8; ++k) a.push_back(m[k].data());
    for (std::size_t count = 1; count <= 8; ++count) {
      SCOPED_TRACE(::testing::Message() << count << " rows of " << n);
      std::vector<float> got(count);
      detail::runDistances(a.data(), count, m[8].data(), n, got.data());
      for (std::size_t g = 0; g < count; ++g) {
        float lanes[16] = {};
        const std::size_t whole = n / 16 * 16;
        for (std::size_t i = 0; i < n; ++i) {
          const float t = m[g][i] - m[8][i];
          float& lane = lanes[i < whole ? i % 16 : 0];
          lane = std::fma(t, t, lane);
        }
        float want = 0.0f;
        for (const float lane : lanes) want += lane;
        EXPECT_EQ(std::memcmp(&got[g], &want, sizeof want), 0) << g << ": " << got[g];
      }
    }
  }
}

TEST(BatchOps, PairwiseDistancesAreEachPairMeasuredAlone) {
  // Columns of the matrix are measured up to eight rows at once: each entry must still be the
  // one a two-row matrix gives (one pair per call), including a non-finite row's.
  auto m = gaussianRows(13, 9000, 1.0f, 21);
  m[6][17] = std::numeric_limits<float>::infinity();
  const auto rows = views(m);
  std::vector<double> all(13 * 13);
  pairwiseSquaredDistances(rows, all);
  for (std::size_t i = 0; i < 13; ++i) {
    for (std::size_t j = i + 1; j < 13; ++j) {
      std::vector<std::span<const float>> two{rows[i], rows[j]};
      std::vector<double> alone(4);
      pairwiseSquaredDistances(two, alone);
      if (std::isnan(alone[1])) {
        EXPECT_TRUE(std::isnan(all[i * 13 + j])) << i << "," << j;
      } else {
        EXPECT_EQ(std::memcmp(&all[i * 13 + j], &alone[1], sizeof(double)), 0) << i << "," << j;
      }
    }
  }
}

TEST(BatchOps, PairwiseDistancesOfOneBufferRepeatedAreThoseOfSeparateCopies) {
  // An attacker's line search hands the rule f spans of one candidate: measured once, the
  // matrix must be bit for bit the one of f separate buffers holding the same numbers.
  auto m = gaussianRows(4, 9000, 1.0f, 3);
  m[3][5] = std::numeric_limits<float>::infinity();  // a non-finite row, repeated too
  std::vector<std::span<const float>> shared{m[0], m[1], m[1], m[2], m[1], m[3], m[3]};
  const testing::Matrix copies{m[0], m[1], m[1], m[2], m[1], m[3], m[3]};
  const std::size_t n = shared.size();
  std::vector<double> got(n * n), want(n * n);
  pairwiseSquaredDistances(shared, got);
  pairwiseSquaredDistances(views(copies), want);
  for (std::size_t k = 0; k < n * n; ++k) {
    SCOPED_TRACE(k);
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got[k]));
    } else {
      EXPECT_EQ(got[k], want[k]);
    }
  }
  EXPECT_EQ(got[1 * n + 2], 0.0);           // two copies of a finite row
  EXPECT_TRUE(std::isnan(got[5 * n + 6]));  // two copies of a non-finite one
  EXPECT_EQ(got[5 * n + 5], 0.0);           // the diagonal stays 0
  EXPECT_GT(got[0 * n + 4], 0.0);
}

TEST(BatchOps, PairwiseDistancesTakeTheKnownPairsAsTheyWouldMeasureThem) {
  const auto m = gaussianRows(6, 9000, 1.0f, 5);
  const auto all = views(m);
  const std::vector<std::span<const float>> first(all.begin(), all.begin() + 4);
  const KnownDistances known(first);
  std::vector<double> got(36), want(36);
  pairwiseSquaredDistances(all, got, &known);
  pairwiseSquaredDistances(all, want);
  EXPECT_EQ(got, want);
  // Another buffer (a copy of row 1's numbers) or another length is not known.
  const std::vector<float> copy = m[1];
  EXPECT_FALSE(known.find(m[0], copy).has_value());
  EXPECT_FALSE(known.find(std::span<const float>(m[0]).first(10), m[1]).has_value());
  ASSERT_TRUE(known.find(m[0], m[1]).has_value());
  EXPECT_EQ(*known.find(m[0], m[1]), want[1]);
}

TEST(BatchOps, NonFiniteRowsGiveNonFiniteDistancesAndHugeOnesDoNot) {
  testing::Matrix m{{0, 0},
                    {1e30f, -1e30f},
                    {std::numeric_limits<float>::quiet_NaN(), 0},
                    {std::numeric_limits<float>::infinity(), 0}};
  std::vector<double> to(4);
  squaredDistancesTo(m[0], views(m), to);
  EXPECT_DOUBLE_EQ(to[0], 0.0);
  EXPECT_TRUE(std::isfinite(to[1]));
  EXPECT_NEAR(to[1], 2.0 * double(1e30f) * double(1e30f), 1e48);
  EXPECT_FALSE(std::isfinite(to[2]));
  EXPECT_FALSE(std::isfinite(to[3]));
}

TEST(BatchOps, DistancesAndSumInOnePassMatchTheSeparateKernels) {
  for (std::size_t d : {1u, 4097u, 40000u}) {
    SCOPED_TRACE(d);
    const auto m = gaussianRows(6, d, 1.0f, d + 3);
    const auto rows = views(m);
    std::vector<double> fused(6), separate(6);
    std::vector<float> sum(d, 123.0f);  // stale contents must not leak in
    squaredDistancesAndSum(m[2], rows, fused, sum);
    squaredDistancesTo(m[2], rows, separate);
    // Rows are summed in groups of four there: the same terms, another order.
    for (std::size_t k = 0; k < 6; ++k) EXPECT_NEAR(fused[k], separate[k], 1e-5 * separate[k]);
    for (std::size_t c = 0; c < d; ++c) {
      double naive = 0;
      for (const auto& r : m) naive += r[c];
      ASSERT_NEAR(sum[c], naive, 1e-5) << c;
    }
  }
}

// An attacker's f copies are one buffer f times: measured once, summed as often. The results
// are bit for bit those of f separate buffers with the same contents (nothing shared), for
// copies in whole groups of four, across groups, in the tail, and between other rows.
TEST(BatchOps, CopiesOfOneBufferGiveWhatSeparateEqualRowsGive) {
  const std::size_t d = 9000;
  const auto m = gaussianRows(4, d, 1.0f, 77);
  for (std::size_t before : {0u, 1u, 3u, 4u}) {
    for (std::size_t copies : {1u, 2u, 4u, 7u, 8u, 13u, 50u}) {
      for (std::size_t after : {0u, 2u}) {
        SCOPED_TRACE(::testing::Message() << before << " + " << copies << " + " << after);
        std::vector<std::vector<float>> separate(copies, m[3]);
        std::vector<std::span<const float>> shared, distinct;
        for (std::size_t k = 0; k < before; ++k) {
          shared.emplace_back(m[k % 3]);
          distinct.emplace_back(m[k % 3]);
        }
        for (std::size_t k = 0; k < copies; ++k) {
          shared.emplace_back(m[3]);
          distinct.emplace_back(separate[k]);
        }
        for (std::size_t k = 0; k < after; ++k) {
          shared.emplace_back(m[k]);
          distinct.emplace_back(m[k]);
        }
        const std::size_t n = shared.size();
        std::vector<double> want(n), got(n), want_to(n), got_to(n);
        std::vector<float> want_sum(d), got_sum(d);
        EXPECT_EQ(squaredDistancesAndSum(m[0], shared, got, got_sum),
                  squaredDistancesAndSum(m[0], distinct, want, want_sum));
        EXPECT_EQ(got, want);
        ASSERT_EQ(std::memcmp(got_sum.data(), want_sum.data(), d * sizeof(float)), 0);
        squaredDistancesTo(m[1], shared, got_to);
        squaredDistancesTo(m[1], distinct, want_to);
        EXPECT_EQ(got_to, want_to);
      }
    }
  }
}

// A line search's rows: `fixed` ones (the first the center), then copies of a candidate that
// changes between calls. With a RowPrefix every call's distances, sum and ‖center‖² (and
// squaredDistancesTo's distances) are the plain call's bit for bit, whatever the counts (groups of
// four, a tail, nothing held), and when the leading buffers are other ones (the prefix is measured
// again).
TEST(BatchOps, ARowPrefixGivesThePlainPassBitForBit) {
  const std::size_t d = 20000;
  for (std::size_t fixed : {1u, 3u, 4u, 5u, 8u, 9u}) {
    for (std::size_t copies : {0u, 1u, 2u, 5u}) {
      SCOPED_TRACE(::testing::Message() << fixed << " fixed, " << copies << " copies");
      auto m = gaussianRows(fixed + 1, d, 1.0f, 31 * fixed + copies);
      auto other = gaussianRows(fixed, d, 1.0f, 7 * fixed + copies + 1);
      RowPrefix prefix(fixed);
      for (int call = 0; call < 4; ++call) {
        for (float& v : m[fixed]) v = v * 0.5f + float(call);  // the candidate moves
        // From the third call on, other leading buffers (another center among them).
        const auto& lead = call >= 2 ? other : m;
        std::vector<std::span<const float>> rows;
        for (std::size_t k = 0; k < fixed; ++k) rows.emplace_back(lead[k]);
        rows.insert(rows.end(), copies, std::span<const float>(m[fixed]));
        std::vector<double> want(rows.size()), got(rows.size());
        std::vector<float> want_sum(d), got_sum(d, -5.0f);
        const double want_norm = squaredDistancesAndSum(lead[0], rows, want, want_sum);
        const double got_norm = squaredDistancesAndSum(lead[0], rows, got, got_sum, &prefix);
        EXPECT_EQ(got_norm, want_norm);
        EXPECT_EQ(got, want);
        ASSERT_EQ(std::memcmp(got_sum.data(), want_sum.data(), d * sizeof(float)), 0);
        // The distances alone (the rules that do not sum every row), through the same prefix.
        std::vector<double> want_to(rows.size()), got_to(rows.size(), -1.0);
        squaredDistancesTo(lead[0], rows, want_to);
        squaredDistancesTo(lead[0], rows, got_to, &prefix);
        EXPECT_EQ(got_to, want_to);
      }
    }
  }
}

TEST(BatchOps, AccumulateThenScaleAndItsOverflowSignal) {
  testing::Matrix m{{1, 2}, {std::numeric_limits<float>::quiet_NaN(), 0}, {10, 20}};
  std::vector<float> z{4, 8};
  // z = 0.5 * (z - row0 + 0 * NaN-row (not read) + 2 * row2)
  EXPECT_TRUE(accumulateThenScale(views(m), std::vector<double>{-1.0, 0.0, 2.0}, 0.5, z));
  EXPECT_EQ(z, (std::vector<float>{11.5f, 23.0f}));
  testing::Matrix big{{3e38f}, {3e38f}};
  std::vector<float> y{3e38f};
  EXPECT_FALSE(accumulateThenScale(views(big), std::vector<double>{1.0, 1.0}, 0.25, y));
}

TEST(BatchOps, WeightedSumSkipsZeroWeightRows) {
  testing::Matrix m{{1, 2}, {std::numeric_limits<float>::quiet_NaN(), 0}, {10, 20}};
  std::vector<float> out(2);
  weightedSum(views(m), std::vector<double>{0.5, 0.0, 0.25}, out);
  EXPECT_EQ(out, (std::vector<float>{3.0f, 6.0f}));
}

}  // namespace
}  // namespace phalanx::kernels
