#include "kernels/order_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "tests/support/rows.h"

namespace phalanx::kernels {
namespace {

using testing::gaussianRows;
using testing::views;

TEST(OrderStats, TrimmedMeanAndMedianPerCoordinate) {
  testing::Matrix m{{1, 10}, {2, 20}, {3, 30}, {100, -100}};
  std::vector<float> out(2);
  coordinateTrimmedMean(views(m), 1, out);
  EXPECT_EQ(out, (std::vector<float>{2.5f, 15.0f}));
  coordinateTrimmedMean(views(m), 0, out);
  EXPECT_EQ(out, (std::vector<float>{26.5f, -10.0f}));
  coordinateMedian(views(m), out);
  EXPECT_EQ(out, (std::vector<float>{2.5f, 15.0f}));
  m.pop_back();
  coordinateMedian(views(m), out);
  EXPECT_EQ(out, (std::vector<float>{2.0f, 20.0f}));
}

TEST(OrderStats, CoordinateRulesAcrossBlocksMatchNaive) {
  const auto m = gaussianRows(7, 1000, 1.0f, 3);
  std::vector<float> tm(1000), med(1000);
  coordinateTrimmedMean(views(m), 2, tm);
  coordinateMedian(views(m), med);
  for (std::size_t j = 0; j < 1000; ++j) {
    std::vector<float> v;
    for (const auto& r : m) v.push_back(r[j]);
    std::sort(v.begin(), v.end());
    EXPECT_FLOAT_EQ(med[j], v[3]);
    EXPECT_NEAR(tm[j], (double(v[2]) + v[3] + v[4]) / 3.0, 1e-6);
  }
}

// The sorting network (up to 64 rows) and the per-coordinate sort above it give, bit for bit,
// what sorting each coordinate with std::sort and summing in ascending order gives: every row
// count from 1 to 70, every trim, ties, ±0, huge values, a length that ends inside a block.
TEST(OrderStats, CoordinateRulesEqualASortPerCoordinateBitForBit) {
  const std::size_t d = 2 * 256 + 37;
  std::mt19937 rng(20261123);
  std::uniform_int_distribution<int> small(-3, 3);
  for (std::size_t n = 1; n <= 70; ++n) {
    auto m = gaussianRows(n, d, 1.0f, std::uint32_t(n));
    for (auto& row : m) {
      for (std::size_t j = 0; j < d; j += 3) row[j] = float(small(rng));  // many ties
      row[1] = -0.0f;
      row[4] = (rng() % 2) ? 0.0f : -0.0f;
      row[7] = (rng() % 2) ? 3e38f : -3e38f;
    }
    std::vector<std::vector<float>> sorted(d);
    for (std::size_t j = 0; j < d; ++j) {
      for (const auto& row : m) sorted[j].push_back(row[j]);
      std::sort(sorted[j].begin(), sorted[j].end());
    }
    std::vector<float> got(d);
    coordinateMedian(views(m), got);
    for (std::size_t j = 0; j < d; ++j) {
      const auto& v = sorted[j];
      const float want = n % 2 ? v[n / 2] : float((double(v[n / 2 - 1]) + double(v[n / 2])) / 2.0);
      ASSERT_EQ(got[j], want) << "median, n " << n << " coordinate " << j;
    }
    for (std::size_t trim = 0; 2 * trim < n; ++trim) {
      coordinateTrimmedMean(views(m), trim, got);
      for (std::size_t j = 0; j < d; ++j) {
        double sum = 0;
        for (std::size_t k = trim; k < n - trim; ++k) sum += sorted[j][k];
        ASSERT_EQ(got[j], float(sum / double(n - 2 * trim)))
            << "trimmed mean, n " << n << " trim " << trim << " coordinate " << j;
      }
    }
  }
}

TEST(OrderStats, OrderStatisticsWithCopiesEqualTheFullSetBitForBit) {
  for (const std::size_t h : {std::size_t(1), std::size_t(6), std::size_t(21)}) {
    const auto honest = gaussianRows(h, 777, 1.0f, std::uint32_t(h));
    const SortedColumns sorted = sortColumns(views(honest));
    auto extra = gaussianRows(1, 777, 3.0f, 99)[0];
    extra[0] = honest[0][0];  // a tie with an honest value
    extra[1] = -1e30f;        // below every value
    extra[2] = 1e30f;         // above every value
    for (const std::size_t copies : {std::size_t(1), std::size_t(4), std::size_t(5)}) {
      auto all = honest;
      for (std::size_t c = 0; c < copies; ++c) all.push_back(extra);
      std::vector<float> want(777), got(777);
      coordinateMedian(views(all), want);
      medianWithCopies(sorted, extra, copies, got);
      EXPECT_EQ(got, want) << "median, h " << h << " copies " << copies;
      for (std::size_t trim = 0; 2 * trim < all.size(); trim += 2) {
        coordinateTrimmedMean(views(all), trim, want);
        trimmedMeanWithCopies(sorted, extra, copies, trim, got);
        EXPECT_EQ(got, want) << "trimmed mean, h " << h << " copies " << copies << " trim " << trim;
      }
    }
  }
}

}  // namespace
}  // namespace phalanx::kernels
