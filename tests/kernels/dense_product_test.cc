// The first layer's product on wide vectors against Eigen's own, bit for bit, on the shapes
// evaluation meets (a thousand test rows, chunks of 2,048 and their remainder, hidden widths
// with and without Eigen's one-packet tail, a deep input that Eigen cuts in several blocks).
#include "kernels/dense_product.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace phalanx::kernels {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;

bool wideVectors() { return __builtin_cpu_supports("avx2"); }

struct Shape {
  std::size_t n, k, m;
};

class DenseProduct : public ::testing::TestWithParam<Shape> {};

TEST_P(DenseProduct, EqualsEigenBitForBit) {
  if (!kEigenOrderKnown || !wideVectors()) GTEST_SKIP() << "Eigen or the CPU runs Eigen here";
  Eigen::setNbThreads(1);
  const auto [n, k, m] = GetParam();
  std::mt19937 rng(unsigned(n * 31 + k * 7 + m));
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> x(n * k), w(m * k);
  for (float& v : x) v = uniform(rng) < 0.5f ? 0.0f : uniform(rng);  // images: half zeros
  for (float& v : w) v = 0.05f * normal(rng);
  RowMatrix eigen(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(m));
  eigen.noalias() = ConstRowMap(x.data(), Eigen::Index(n), Eigen::Index(k)) *
                    ConstRowMap(w.data(), Eigen::Index(m), Eigen::Index(k)).transpose();
  std::vector<float> ours(n * m, -1.0f);
  ASSERT_TRUE(productLikeEigen(x, w, n, k, m, ours));
  std::size_t differing = 0;
  for (std::size_t i = 0; i < n * m; ++i)
    differing += std::memcmp(&ours[i], eigen.data() + i, sizeof(float)) != 0;
  EXPECT_EQ(differing, 0u) << "of " << n * m;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseProduct,
                         ::testing::Values(Shape{1000, 784, 100}, Shape{2048, 784, 100},
                                           Shape{1808, 784, 100}, Shape{32, 784, 100},
                                           Shape{4, 784, 100}, Shape{1000, 784, 200},
                                           Shape{64, 784, 300}, Shape{1000, 784, 28},
                                           Shape{1000, 784, 12}, Shape{1000, 784, 8},
                                           Shape{1000, 784, 4}, Shape{1000, 784, 36},
                                           Shape{1000, 100, 12}, Shape{200, 3000, 100}));

TEST(DenseProductShapes, LeavesToEigenWhatItDoesNotReproduce) {
  std::vector<float> x(30 * 784, 1.0f), w(100 * 784, 1.0f), out(30 * 100, -1.0f);
  EXPECT_FALSE(productLikeEigen(x, w, 30, 784, 100, out));  // rows not a multiple of 4
  std::vector<float> w10(10 * 784, 1.0f), out10(32 * 10, -1.0f), x32(32 * 784, 1.0f);
  EXPECT_FALSE(productLikeEigen(x32, w10, 32, 784, 10, out10));  // outputs not a multiple of 4
  std::vector<float> tiny_x(4 * 4, 1.0f), tiny_w(4 * 4, 1.0f), tiny_out(16, -1.0f);
  EXPECT_FALSE(productLikeEigen(tiny_x, tiny_w, 4, 4, 4, tiny_out));  // Eigen's lazy product
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out10[0], -1.0f);
  EXPECT_EQ(tiny_out[0], -1.0f);
}

}  // namespace
}  // namespace phalanx::kernels
