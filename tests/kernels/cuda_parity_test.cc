// CPU vs CUDA parity for every kernel of the CUDA backend (label gpu): bit-exact for
// selection and packing, relative error <= 1e-6 for sums. Skipped when no device answers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "kernels/batch_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/device.h"
#include "kernels/order_stats.h"
#include "kernels/pack.h"
#include "kernels/quantize.h"
#include "kernels/select.h"

namespace phalanx::kernels {
namespace {

class CudaParity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device answers";
    useBackend(Device::kCpu);  // the CPU functions below must run the CPU reference
  }
  void TearDown() override { useBackend(Device::kCpu); }
};

std::vector<float> normal(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

template <class T>
std::vector<T> download(const cuda::DeviceArray<T>& a) {
  std::vector<T> host(a.size());
  a.download(host.data());
  return host;
}

// Rows on the device: one contiguous copy, plus the device array of row pointers.
struct DeviceRows {
  cuda::DeviceArray<float> data;
  cuda::DeviceArray<const float*> ptrs;
  DeviceRows(const std::vector<std::vector<float>>& rows) {
    const std::size_t d = rows.empty() ? 0 : rows[0].size();
    data.resize(rows.size() * d);
    std::vector<const float*> p;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      cuda::copyToDevice(data.data() + k * d, rows[k].data(), d * sizeof(float));
      p.push_back(data.data() + k * d);
    }
    ptrs.upload(p.data(), p.size());
  }
};

std::vector<std::span<const float>> spans(const std::vector<std::vector<float>>& rows) {
  return {rows.begin(), rows.end()};
}

std::vector<std::vector<float>> randomRows(std::size_t n, std::size_t d, std::uint32_t seed) {
  std::vector<std::vector<float>> rows;
  for (std::size_t k = 0; k < n; ++k)
    rows.push_back(normal(d, seed + std::uint32_t(k), 1.0f + float(k)));
  return rows;
}

void expectRelative(double got, double want, double tol, const char* what) {
  EXPECT_LE(std::abs(got - want), tol * std::max(1e-30, std::abs(want)))
      << what << ": " << got << " vs " << want;
}

TEST_F(CudaParity, TopkIsBitExactIncludingTies) {
  cuda::TopkScratch scratch;
  for (const std::size_t n :
       {std::size_t(1000), std::size_t(65537), std::size_t(1) << 20, std::size_t(3'000'001)}) {
    for (const bool ties : {false, true}) {
      std::vector<float> x = normal(n, 7 + std::uint32_t(n));
      if (ties) {
        for (float& v : x) v = std::round(v * 4.0f) / 4.0f;  // a few dozen distinct magnitudes
      }
      cuda::DeviceArray<float> dx;
      dx.upload(x.data(), n);
      for (const double density : {0.001, 0.01, 0.1, 0.5, 1.0}) {
        const std::size_t k = std::max<std::size_t>(1, std::size_t(density * double(n)));
        std::vector<std::uint32_t> want;
        topkIndices(x, k, want);
        cuda::DeviceArray<std::uint32_t> out(k);
        cuda::topkIndices(dx.data(), n, k, out.data(), scratch);
        EXPECT_EQ(download(out), want) << "n " << n << " k " << k << " ties " << ties;
      }
    }
  }
}

TEST_F(CudaParity, HalfAndBfloat16AreBitExact) {
  const std::size_t n = 1 << 20;
  std::vector<float> x(n);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
  std::normal_distribution<float> mantissa;
  for (float& v : x) v = mantissa(gen) * std::exp2(exponent(gen));  // subnormal to saturated
  x[0] = 65504.0f;
  x[1] = 65519.0f;
  x[2] = -1e30f;
  x[3] = std::numeric_limits<float>::max();
  x[4] = -0.0f;
  cuda::DeviceArray<float> dx;
  dx.upload(x.data(), n);
  cuda::DeviceArray<std::uint16_t> out(n);
  std::vector<std::uint16_t> want(n);

  ASSERT_TRUE(toHalf(x, want));
  ASSERT_TRUE(cuda::toHalf(dx.data(), n, out.data()));
  EXPECT_EQ(download(out), want);
  ASSERT_TRUE(toBfloat16(x, want));
  ASSERT_TRUE(cuda::toBfloat16(dx.data(), n, out.data()));
  EXPECT_EQ(download(out), want);

  x[5] = std::numeric_limits<float>::quiet_NaN();
  dx.upload(x.data(), n);
  EXPECT_FALSE(cuda::toHalf(dx.data(), n, out.data()));
  EXPECT_FALSE(cuda::toBfloat16(dx.data(), n, out.data()));
}

TEST_F(CudaParity, SignsAndFixedWidthCodesPackToTheSameBytes) {
  for (const std::size_t n : {std::size_t(1), std::size_t(31), std::size_t(1000003)}) {
    std::vector<float> x = normal(n, 11);
    x[0] = -0.0f;  // not < 0: bit clear, as on the CPU
    cuda::DeviceArray<float> dx;
    dx.upload(x.data(), n);
    std::vector<std::uint8_t> want(packedBytes(n, 1));
    packSigns(x, want);
    cuda::DeviceArray<std::uint8_t> out(want.size());
    cuda::packSigns(dx.data(), n, out.data());
    EXPECT_EQ(download(out), want) << n;

    for (unsigned width = 1; width <= 24; ++width) {
      std::mt19937 gen(width);
      std::vector<std::uint32_t> codes(n);
      for (auto& c : codes) c = gen() & ((1u << width) - 1);
      cuda::DeviceArray<std::uint32_t> dcodes;
      dcodes.upload(codes.data(), n);
      std::vector<std::uint8_t> packed(packedBytes(n, width));
      packBits(codes, width, packed);
      cuda::DeviceArray<std::uint8_t> dpacked(packed.size());
      cuda::packBits(dcodes.data(), n, width, dpacked.data());
      EXPECT_EQ(download(dpacked), packed) << "n " << n << " width " << width;
    }
  }
}

TEST_F(CudaParity, QsgdNormsAgreeAndCodesMatchWhereNormsDo) {
  const std::size_t n = 1'000'000, bucket = 512;
  const std::vector<float> x = normal(n, 5);
  const std::size_t buckets = (n + bucket - 1) / bucket;
  const CounterRng rng{42};
  std::vector<float> norms(buckets);
  std::vector<std::uint32_t> codes(n);
  ASSERT_TRUE(qsgdQuantize(x, bucket, 127, 8, rng, norms, codes));
  cuda::DeviceArray<float> dx, dnorms(buckets);
  dx.upload(x.data(), n);
  cuda::DeviceArray<std::uint32_t> dcodes(n);
  ASSERT_TRUE(cuda::qsgdQuantize(dx.data(), n, bucket, 127, 8, rng, dnorms.data(), dcodes.data()));
  const auto gnorms = download(dnorms);
  const auto gcodes = download(dcodes);
  std::size_t same = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    expectRelative(gnorms[b], norms[b], 1e-6, "bucket norm");
    if (gnorms[b] != norms[b]) continue;
    ++same;
    for (std::size_t j = b * bucket; j < std::min(n, (b + 1) * bucket); ++j) {
      ASSERT_EQ(gcodes[j], codes[j]) << "entry " << j;
    }
  }
  EXPECT_GE(double(same), 0.99 * double(buckets));
}

TEST_F(CudaParity, DistancesAndRowSumWithinOneMillionth) {
  for (const std::size_t n : {std::size_t(1), std::size_t(9), std::size_t(32), std::size_t(100)}) {
    const std::size_t d = 300'007;
    const auto rows = randomRows(n, d, 100);
    const auto center = normal(d, 99);
    const auto host = spans(rows);
    std::vector<double> want(n), want_pair(n * n);
    std::vector<float> want_sum(d);
    const double want_norm = squaredDistancesAndSum(center, host, want, want_sum);

    DeviceRows dev(rows);
    cuda::DeviceArray<float> dc, dsum(d);
    dc.upload(center.data(), d);
    cuda::DeviceArray<double> dout(n);
    cuda::squaredDistancesTo(dc.data(), dev.ptrs.data(), n, d, dout.data());
    auto got = download(dout);
    for (std::size_t k = 0; k < n; ++k) expectRelative(got[k], want[k], 1e-6, "distance to center");

    const double norm =
        cuda::squaredDistancesAndSum(dc.data(), dev.ptrs.data(), n, d, dout.data(), dsum.data());
    expectRelative(norm, want_norm, 1e-6, "center norm");
    got = download(dout);
    for (std::size_t k = 0; k < n; ++k)
      expectRelative(got[k], want[k], 1e-6, "distance (with sum)");
    const auto sum = download(dsum);
    for (std::size_t i = 0; i < d; ++i) {
      double magnitude = 0;
      for (const auto& r : rows) magnitude += std::abs(double(r[i]));
      ASSERT_LE(std::abs(double(sum[i]) - double(want_sum[i])), 1e-6 * magnitude) << i;
    }

    if (n <= cuda::kMaxOrderRows) {
      pairwiseSquaredDistances(host, want_pair);
      cuda::DeviceArray<double> dpair(n * n);
      cuda::pairwiseSquaredDistances(dev.ptrs.data(), n, d, dpair.data());
      const auto pair = download(dpair);
      for (std::size_t e = 0; e < n * n; ++e)
        expectRelative(pair[e], want_pair[e], 1e-6, "pairwise");
    }
  }
}

TEST_F(CudaParity, NonFiniteRowsGiveNonFiniteDistancesAndHugeRowsStayFinite) {
  const std::size_t d = 100'000;
  auto rows = randomRows(4, d, 7);
  rows[1][123] = std::numeric_limits<float>::quiet_NaN();
  for (float& v : rows[2]) v = v > 0 ? 3e38f : -3e38f;  // finite, but squares overflow float
  const auto center = normal(d, 8);
  DeviceRows dev(rows);
  cuda::DeviceArray<float> dc;
  dc.upload(center.data(), d);
  cuda::DeviceArray<double> dout(4), dpair(16);
  cuda::squaredDistancesTo(dc.data(), dev.ptrs.data(), 4, d, dout.data());
  const auto got = download(dout);
  EXPECT_TRUE(std::isfinite(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_TRUE(std::isfinite(got[2]));
  std::vector<double> want(4);
  squaredDistancesTo(center, spans(rows), want);
  expectRelative(got[2], want[2], 1e-6, "huge row");
  cuda::pairwiseSquaredDistances(dev.ptrs.data(), 4, d, dpair.data());
  const auto pair = download(dpair);
  EXPECT_TRUE(std::isnan(pair[0 * 4 + 1]));
  EXPECT_TRUE(std::isfinite(pair[0 * 4 + 2]));
  EXPECT_TRUE(std::isfinite(pair[2 * 4 + 3]));
}

TEST_F(CudaParity, WeightedSumsWithinOneMillionth) {
  const std::size_t n = 12, d = 500'001;
  const auto rows = randomRows(n, d, 21);
  std::vector<double> weights(n);
  for (std::size_t k = 0; k < n; ++k) weights[k] = k % 4 == 3 ? 0.0 : 0.05 * double(k + 1);
  std::vector<float> want(d), z = normal(d, 3), want_z = z;
  weightedSum(spans(rows), weights, want);
  ASSERT_TRUE(accumulateThenScale(spans(rows), weights, 0.5, want_z));

  DeviceRows dev(rows);
  cuda::DeviceArray<double> dw;
  dw.upload(weights.data(), n);
  cuda::DeviceArray<float> dout(d), dz;
  dz.upload(z.data(), d);
  cuda::weightedSum(dev.ptrs.data(), dw.data(), n, d, dout.data());
  ASSERT_TRUE(cuda::accumulateThenScale(dev.ptrs.data(), dw.data(), n, d, 0.5, dz.data()));
  const auto got = download(dout), got_z = download(dz);
  for (std::size_t i = 0; i < d; ++i) {
    double magnitude = std::abs(double(z[i]));
    for (std::size_t k = 0; k < n; ++k) magnitude += std::abs(weights[k] * double(rows[k][i]));
    ASSERT_LE(std::abs(double(got[i]) - double(want[i])), 1e-6 * magnitude) << i;
    ASSERT_LE(std::abs(double(got_z[i]) - double(want_z[i])), 1e-6 * magnitude) << i;
  }
}

TEST_F(CudaParity, TrimmedMeanAndMedianAreBitExact) {
  for (const std::size_t n :
       {std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(26), std::size_t(64)}) {
    const std::size_t d = 200'003;
    const auto rows = randomRows(n, d, 31);
    DeviceRows dev(rows);
    cuda::DeviceArray<float> dout(d);
    std::vector<float> want(d);
    coordinateMedian(spans(rows), want);
    cuda::coordinateMedian(dev.ptrs.data(), n, d, dout.data());
    EXPECT_EQ(download(dout), want) << "median, n " << n;
    const std::size_t trim = (n - 1) / 2 / 2;
    coordinateTrimmedMean(spans(rows), trim, want);
    cuda::coordinateTrimmedMean(dev.ptrs.data(), n, d, trim, dout.data());
    EXPECT_EQ(download(dout), want) << "trimmed mean, n " << n << " trim " << trim;
  }
}

// The CPU entry points with the CUDA backend chosen: the offload path (uploads, workspace)
// gives what the CPU gives.
TEST_F(CudaParity, CpuEntryPointsOffloadWhenCudaIsChosen) {
  const std::size_t n = 8, d = 1 << 18;
  const auto rows = randomRows(n, d, 51);
  const auto x = normal(d, 52);
  std::vector<std::uint32_t> want_topk, got_topk;
  std::vector<float> want_median(d), got_median(d);
  std::vector<double> want_pair(n * n), got_pair(n * n);
  topkIndices(x, d / 100, want_topk);
  coordinateMedian(spans(rows), want_median);
  pairwiseSquaredDistances(spans(rows), want_pair);
  ASSERT_EQ(useBackend(Device::kCuda), Backend::kCuda);
  topkIndices(x, d / 100, got_topk);
  coordinateMedian(spans(rows), got_median);
  pairwiseSquaredDistances(spans(rows), got_pair);
  EXPECT_EQ(got_topk, want_topk);
  EXPECT_EQ(got_median, want_median);
  for (std::size_t e = 0; e < n * n; ++e)
    expectRelative(got_pair[e], want_pair[e], 1e-6, "pairwise");
}

}  // namespace
}  // namespace phalanx::kernels
