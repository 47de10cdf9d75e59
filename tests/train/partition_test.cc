#include "train/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

namespace phalanx::train {
namespace {

std::vector<std::uint8_t> balancedLabels(std::size_t n, std::size_t classes) {
  std::vector<std::uint8_t> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = std::uint8_t(i % classes);
  return y;
}

// Every index in [0, n) appears in exactly one part.
void expectDisjointAndCovering(const Partition& parts, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& p : parts) {
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
    for (auto i : p) {
      ASSERT_LT(i, n);
      ++seen[i];
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

// Mean over nodes of the share of the node's samples in its most frequent class.
double meanDominantShare(const Partition& parts, const std::vector<std::uint8_t>& y) {
  double total = 0;
  for (const auto& p : parts) {
    std::vector<int> counts(10, 0);
    for (auto i : p) ++counts[y[i]];
    total += double(*std::max_element(counts.begin(), counts.end())) / double(p.size());
  }
  return total / double(parts.size());
}

TEST(Partition, IidIsDisjointCoveringAndBalanced) {
  const Partition parts = partitionIid(1003, 10, 42);
  ASSERT_EQ(parts.size(), 10u);
  expectDisjointAndCovering(parts, 1003);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    EXPECT_EQ(parts[k].size(), k < 3 ? 101u : 100u);
  }
}

TEST(Partition, IidIsReproducibleAndSeedDependent) {
  EXPECT_EQ(partitionIid(500, 4, 7), partitionIid(500, 4, 7));
  EXPECT_NE(partitionIid(500, 4, 7), partitionIid(500, 4, 8));
}

TEST(Partition, DirichletIsDisjointCoveringAndReproducible) {
  const auto y = balancedLabels(6000, 10);
  const Partition a = partitionDirichlet(y, 10, 8, 1.0, 3);
  expectDisjointAndCovering(a, y.size());
  EXPECT_EQ(a, partitionDirichlet(y, 10, 8, 1.0, 3));
  EXPECT_NE(a, partitionDirichlet(y, 10, 8, 1.0, 4));
  for (const auto& p : a) EXPECT_GE(p.size(), 1u);
}

TEST(Partition, DirichletSkewGrowsAsAlphaShrinks) {
  const auto y = balancedLabels(20000, 10);
  const double iid = meanDominantShare(partitionIid(y.size(), 10, 1), y);
  const double mild = meanDominantShare(partitionDirichlet(y, 10, 10, 100.0, 1), y);
  const double skewed = meanDominantShare(partitionDirichlet(y, 10, 10, 0.1, 1), y);
  EXPECT_NEAR(iid, 0.1, 0.03);   // ten balanced classes
  EXPECT_NEAR(mild, 0.1, 0.05);  // large alpha: close to iid
  EXPECT_GT(skewed, 0.5);        // small alpha: one class dominates each node
  EXPECT_GT(skewed, mild + 0.3);
}

TEST(Partition, DirichletHonoursMinimumPerNode) {
  const auto y = balancedLabels(2000, 10);
  const Partition parts = partitionDirichlet(y, 10, 20, 0.3, 5, 20);
  expectDisjointAndCovering(parts, y.size());
  for (const auto& p : parts) EXPECT_GE(p.size(), 20u);
}

TEST(Partition, ImpossibleRequestsAreErrors) {
  const auto y = balancedLabels(10, 2);
  EXPECT_THROW(partitionIid(10, 0, 1), std::invalid_argument);
  EXPECT_THROW(partitionDirichlet(y, 2, 0, 1.0, 1), std::invalid_argument);
  EXPECT_THROW(partitionDirichlet(y, 2, 4, 0.0, 1), std::invalid_argument);
  EXPECT_THROW(partitionDirichlet(y, 2, 20, 1.0, 1),
               std::invalid_argument);                                       // 10 samples, 20 nodes
  EXPECT_THROW(partitionDirichlet(y, 1, 2, 1.0, 1), std::invalid_argument);  // label 1 >= 1 class
}

}  // namespace
}  // namespace phalanx::train
