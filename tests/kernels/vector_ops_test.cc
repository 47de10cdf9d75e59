#include "kernels/vector_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

// The wire-side scans: every position of a vector longer than one scan chunk (4096 words), the
// largest finite values, subnormals and negative zero pass; NaN, ±Inf fail wherever they are.
TEST(VectorOps, ByteScansFindEveryNonFiniteValueAnywhere) {
  const std::size_t n = 3 * 4096 + 17;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = float(i % 7) - 3.0f;
  x[5] = std::numeric_limits<float>::max();
  x[6] = -std::numeric_limits<float>::max();
  x[7] = std::numeric_limits<float>::denorm_min();
  x[8] = -0.0f;
  auto bytes = [&] {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(x.data()),
                                         x.size() * sizeof(float));
  };
  EXPECT_TRUE(allFiniteFloat32Bytes(bytes()));
  EXPECT_TRUE(allFinite(x));
  for (std::size_t at : {std::size_t{0}, std::size_t{4095}, std::size_t{4096}, n - 1}) {
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
      const float keep = x[at];
      x[at] = bad;
      EXPECT_FALSE(allFiniteFloat32Bytes(bytes())) << "at " << at;
      EXPECT_FALSE(allFinite(x)) << "at " << at;
      x[at] = keep;
    }
  }
  // A trailing partial word is not a value.
  EXPECT_TRUE(allFiniteFloat32Bytes(bytes().first(n * 4 - 1)));

  // fp16: 0x7bff is the largest finite half, 0x7c00 infinity, 0x7e00 NaN, 0xfc00 -Inf.
  std::vector<std::uint16_t> half(5000, 0x3c00);
  half[100] = 0x7bff;
  half[101] = 0xfbff;
  const std::span<const std::uint8_t> half_bytes(reinterpret_cast<const std::uint8_t*>(half.data()),
                                                 half.size() * 2);
  EXPECT_TRUE(allFinite16BitBytes(half_bytes, 0x7c00));
  for (std::uint16_t bad : {0x7c00, 0x7e00, 0xfc00}) {
    half[4999] = bad;
    EXPECT_FALSE(allFinite16BitBytes(half_bytes, 0x7c00)) << bad;
  }
  // bf16: 0x7f7f is the largest finite value, 0x7f80 infinity.
  half.assign(5000, 0x3f80);
  half[0] = 0x7f7f;
  EXPECT_TRUE(allFinite16BitBytes(half_bytes, 0x7f80));
  half[4096] = 0x7f80;
  EXPECT_FALSE(allFinite16BitBytes(half_bytes, 0x7f80));
}

TEST(VectorOps, SumsAccumulateInDouble) {
  // 1e7 copies of 0.1f: a float accumulator drifts by percents, a double one does not.
  std::vector<float> x(10'000'000, 0.1f);
  EXPECT_NEAR(squaredNorm(x), 1e7 * double(0.1f) * double(0.1f), 1e-3);
}

}  // namespace
}  // namespace phalanx::kernels
