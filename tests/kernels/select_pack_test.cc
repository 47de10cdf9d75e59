// Selection and packing kernels against brute force and hand-written bytes.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/pack.h"
#include "kernels/quantize.h"
#include "kernels/select.h"

namespace phalanx::kernels {
namespace {

// Reference: sort all indices by (|x| desc, index asc), keep k, ascending.
std::vector<std::uint32_t> bruteTopk(const std::vector<float>& x, std::size_t k) {
  std::vector<std::uint32_t> all(x.size());
  std::iota(all.begin(), all.end(), 0u);
  std::stable_sort(all.begin(), all.end(),
                   [&](auto a, auto b) { return std::abs(x[a]) > std::abs(x[b]); });
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}

TEST(Select, TopkTiesGoToTheLowerIndex) {
  const std::vector<float> x{1, -3, 3, 2, -3, 0.5};
  std::vector<std::uint32_t> out;
  topkIndices(x, 2, out);
  EXPECT_EQ(out, (std::vector<std::uint32_t>{1, 2}));
  topkIndices(x, 4, out);
  EXPECT_EQ(out, (std::vector<std::uint32_t>{1, 2, 3, 4}));
  topkIndices(x, 0, out);
  EXPECT_TRUE(out.empty());
  topkIndices(x, 6, out);
  EXPECT_EQ(out.size(), 6u);
}

TEST(Select, TopkMatchesBruteForceAcrossSizesAndTies) {
  for (const std::size_t d : {1u, 7u, 100u, 5000u, 200000u}) {
    for (const int levels : {0, 3}) {  // 0: continuous values; 3: massive ties
      std::mt19937 rng(unsigned(d) * 31u + unsigned(levels));
      std::normal_distribution<float> g;
      std::vector<float> x(d);
      for (float& v : x) v = levels ? float(int(rng() % levels) - 1) : g(rng);
      for (const std::size_t k : {std::size_t{1}, d / 1000 + 1, d / 10 + 1, d}) {
        std::vector<std::uint32_t> out;
        topkIndices(x, std::min(k, d), out);
        EXPECT_EQ(out, bruteTopk(x, std::min(k, d)))
            << "d=" << d << " k=" << k << " levels=" << levels;
      }
    }
  }
}

TEST(Select, NonFiniteEntriesAreAlwaysSelected) {
  std::vector<float> x(1000, 1.0f);
  x[500] = std::nanf("");
  x[900] = -INFINITY;
  std::vector<std::uint32_t> out;
  topkIndices(x, 2, out);
  EXPECT_EQ(out, (std::vector<std::uint32_t>{500, 900}));
}

TEST(Select, IndicesAtLeastIsAscendingAndComplete) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  std::vector<float> x(300001);
  for (float& v : x) v = g(rng);
  std::vector<std::uint32_t> out;
  indicesAtLeast(x, magnitudeKey(2.5f), out);
  std::vector<std::uint32_t> expect;
  for (std::uint32_t j = 0; j < x.size(); ++j) {
    if (std::abs(x[j]) >= 2.5f) expect.push_back(j);
  }
  EXPECT_EQ(out, expect);
}

TEST(Pack, HalfRoundsToNearestEvenAndSaturates) {
  const std::vector<float> x{1.0f,     1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
                             70000.0f, -1e30f,          0x1p-24f};
  std::vector<std::uint16_t> h(x.size());
  EXPECT_TRUE(toHalf(x, h));
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0x3c00);  // a tie: down to even
  EXPECT_EQ(h[2], 0x3c02);  // a tie: up to even
  EXPECT_EQ(h[3], 0x7bff);  // 65504, not Inf
  EXPECT_EQ(h[4], 0xfbff);
  EXPECT_EQ(h[5], 0x0001);  // the smallest subnormal
  std::vector<float> back(x.size());
  fromHalf(h, back);
  EXPECT_EQ(back[3], 65504.0f);
  const std::vector<float> bad{std::nanf("")};
  std::vector<std::uint16_t> one(1);
  EXPECT_FALSE(toHalf(bad, one));
}

TEST(Pack, Bfloat16RoundsToNearestEven) {
  const std::vector<float> x{1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 3.4e38f};
  std::vector<std::uint16_t> h(x.size());
  EXPECT_TRUE(toBfloat16(x, h));
  EXPECT_EQ(h[0], 0x3f80);
  EXPECT_EQ(h[1], 0x3f80);
  EXPECT_EQ(h[2], 0x3f82);
  EXPECT_EQ(h[3], 0x7f7f);  // saturated below Inf
}

TEST(Pack, SignsAndBitsAreLsbFirst) {
  const std::vector<float> x{-1, 2, -3, 0, 0, 0, 0, 0, -1};
  std::vector<std::uint8_t> s(packedBytes(x.size(), 1));
  packSigns(x, s);
  EXPECT_EQ(s, (std::vector<std::uint8_t>{0b00000101, 0b00000001}));
  const std::vector<std::uint32_t> codes{5, 0, 7, 1};
  std::vector<std::uint8_t> packed(packedBytes(codes.size(), 3));
  packBits(codes, 3, packed);
  EXPECT_EQ(packed, (std::vector<std::uint8_t>{0b11000101, 0b00000011}));
  std::vector<std::uint32_t> back(codes.size());
  unpackBits(packed, 3, back);
  EXPECT_EQ(back, codes);
}

TEST(Quantize, ResultsDoNotDependOnTheThreadCount) {
  std::vector<float> x(300000);
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  for (float& v : x) v = g(rng);
  const CounterRng stream{42};
  std::vector<float> n1(x.size() / 128 + 1), n2(n1.size());
  std::vector<std::uint32_t> c1(x.size()), c2(x.size());
  ASSERT_TRUE(qsgdQuantize(x, 128, 127, 8, stream, n1, c1));
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_TRUE(qsgdQuantize(x, 128, 127, 8, stream, n2, c2));
  omp_set_num_threads(threads);
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(n1, n2);
}

}  // namespace
}  // namespace phalanx::kernels
