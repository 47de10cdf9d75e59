#include "kernels/vector_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace phalanx::kernels {
namespace {

TEST(VectorOps, AxpyAndAxpbyMatchHandComputedValues) {
  std::vector<float> x{1, 2, 3}, y{10, 20, 30};
  axpy(0.5f, x, y);
  EXPECT_EQ(y, (std::vector<float>{10.5f, 21.0f, 31.5f}));
  axpby(2.0f, x, -1.0f, y);
  EXPECT_EQ(y, (std::vector<float>{-8.5f, -17.0f, -25.5f}));
  scale(-2.0f, y);
  EXPECT_EQ(y, (std::vector<float>{17.0f, 34.0f, 51.0f}));
}

TEST(VectorOps, ReductionsMatchHandComputedValues) {
  std::vector<float> x{3, 4, 0}, y{0, 0, 12};
  EXPECT_DOUBLE_EQ(dot(x, y), 0.0);
  EXPECT_DOUBLE_EQ(squaredNorm(x), 25.0);
  EXPECT_DOUBLE_EQ(squaredDistance(x, y), 9.0 + 16.0 + 144.0);
  EXPECT_DOUBLE_EQ(dot(x, x), 25.0);
}

TEST(VectorOps, EmptyVectorsAreFine) {
  std::vector<float> e;
  EXPECT_DOUBLE_EQ(squaredNorm(e), 0.0);
  EXPECT_TRUE(allFinite(e));
}

TEST(VectorOps, AllFiniteSpotsNanAndInf) {
  std::vector<float> x{1, 2, 3};
  EXPECT_TRUE(allFinite(x));
  x[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(allFinite(x));
  x[1] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(allFinite(x));
}

TEST(VectorOps, SumsAccumulateInDouble) {
  // 1e7 copies of 0.1f: a float accumulator drifts by percents, a double one does not.
  std::vector<float> x(10'000'000, 0.1f);
  EXPECT_NEAR(squaredNorm(x), 1e7 * double(0.1f) * double(0.1f), 1e-3);
}

}  // namespace
}  // namespace phalanx::kernels
