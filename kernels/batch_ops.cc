#include "kernels/batch_ops.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/check.h"

namespace phalanx::kernels {
namespace {

// Coordinates per block: the center's block (64 KiB) stays in cache while each row streams
// 64 KiB runs; measured on 32 x 25.6M rows, 16K beat 4K (more stream switches) and 64K.
constexpr std::size_t kBlock = 16384;

using ConstArray = Eigen::Map<const Eigen::ArrayXf>;

std::size_t commonLength(Rows rows) {
  if (rows.empty()) return 0;
  const std::size_t d = rows[0].size();
  for (const auto& r : rows) PHALANX_CHECK(r.size() == d, "batch_ops: rows differ in length");
  return d;
}

ConstArray block(std::span<const float> v, std::size_t start, std::size_t len) {
  return ConstArray(v.data() + start, Eigen::Index(len));
}

std::size_t blockCount(std::size_t d) { return (d + kBlock - 1) / kBlock; }

// Runs body(start, len) over coordinate blocks in parallel and sums each thread's `partials`
// (one double per output) into `out`.
template <class Body>
void reduceOverBlocks(std::size_t d, std::span<double> out, Body body) {
  std::fill(out.begin(), out.end(), 0.0);
  const long blocks = long(blockCount(d));
#pragma omp parallel
  {
    std::vector<double> partial(out.size(), 0.0);
#pragma omp for schedule(static)
    for (long b = 0; b < blocks; ++b) {
      const std::size_t start = std::size_t(b) * kBlock;
      body(start, std::min(kBlock, d - start), partial);
    }
#pragma omp critical
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += partial[i];
  }
}

}  // namespace

namespace {

// ‖a - b‖² over one block: in float (4 lanes) on short runs, which is what keeps the pass at
// memory speed; a run whose float sum is not finite is redone in double, so finite rows near
// FLT_MAX stay finite and only NaN/Inf rows come out non-finite.
// The build targets baseline x86-64 (SSE2), where a squared distance is compute-bound at
// memory speed; these loops are also compiled for AVX2 and AVX-512 and picked at run time.
#if defined(__x86_64__) && !defined(__clang__)
#define PHALANX_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PHALANX_SIMD_CLONES
#endif

PHALANX_SIMD_CLONES float runSquaredDistance(const float* a, const float* b, std::size_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t i = 0; i < n; ++i) {
    const float t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

PHALANX_SIMD_CLONES void runAxpy(float w, const float* x, float* z, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) z[i] += w * x[i];
}

double blockSquaredDistance(const float* a, const float* b, std::size_t len) {
  constexpr std::size_t kRun = 512;
  double total = 0;
  for (std::size_t at = 0; at < len; at += kRun) {
    const std::size_t n = std::min(kRun, len - at);
    const float fast = runSquaredDistance(a + at, b + at, n);
    if (std::isfinite(fast)) {
      total += double(fast);
    } else {
      const ConstArray x(a + at, Eigen::Index(n)), y(b + at, Eigen::Index(n));
      total += (x.cast<double>() - y.cast<double>()).square().sum();
    }
  }
  return total;
}

}  // namespace

void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out) {
  const std::size_t d = commonLength(rows);
  PHALANX_CHECK(out.size() == rows.size(), "squaredDistancesTo: output size");
  PHALANX_CHECK(rows.empty() || center.size() == d, "squaredDistancesTo: center length");
  reduceOverBlocks(d, out, [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      acc[k] += blockSquaredDistance(rows[k].data() + start, center.data() + start, len);
    }
  });
}

void pairwiseSquaredDistances(Rows rows, std::span<double> out) {
  const std::size_t n = rows.size();
  const std::size_t d = commonLength(rows);
  PHALANX_CHECK(out.size() == n * n, "pairwiseSquaredDistances: output size");
  reduceOverBlocks(d, out, [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
        acc[i * n + j] += blockSquaredDistance(rows[i].data() + start, rows[j].data() + start, len);
      }
    }
  });
  for (std::size_t i = 0; i < n; ++i) {
    out[i * n + i] = 0.0;
    for (std::size_t j = i + 1; j < n; ++j) out[j * n + i] = out[i * n + j];
  }
}

void squaredNorms(Rows rows, std::span<double> out) {
  const std::size_t d = commonLength(rows);
  PHALANX_CHECK(out.size() == rows.size(), "squaredNorms: output size");
  reduceOverBlocks(d, out, [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      acc[k] += block(rows[k], start, len).cast<double>().square().sum();
    }
  });
}

void weightedSum(Rows rows, std::span<const double> weights, std::span<float> out) {
  const std::size_t d = out.size();
  PHALANX_CHECK(weights.size() == rows.size(), "weightedSum: one weight per row");
  PHALANX_CHECK(rows.empty() || commonLength(rows) == d, "weightedSum: output length");
  // Larger blocks than the reductions: the output block stays in L2 while each row is
  // streamed in long runs, which the hardware prefetchers follow better across many rows.
  constexpr std::size_t kSumBlock = 4 * kBlock;
  const long blocks = long((d + kSumBlock - 1) / kSumBlock);
#pragma omp parallel for schedule(static)
  for (long b = 0; b < blocks; ++b) {
    const std::size_t start = std::size_t(b) * kSumBlock;
    const std::size_t len = std::min(kSumBlock, d - start);
    float* z = out.data() + start;
    std::fill(z, z + len, 0.0f);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (weights[k] != 0.0) runAxpy(float(weights[k]), rows[k].data() + start, z, len);
    }
  }
}

namespace {

// Applies stat(values) per coordinate, gathering a transposed block so each coordinate's
// values are contiguous.
template <class Stat>
void perCoordinate(Rows rows, std::span<float> out, Stat stat) {
  const std::size_t n = rows.size();
  const std::size_t d = out.size();
  PHALANX_CHECK(n > 0 && commonLength(rows) == d, "coordinate rule: shape mismatch");
  constexpr std::size_t kCoordBlock = 256;
  const long blocks = long((d + kCoordBlock - 1) / kCoordBlock);
#pragma omp parallel
  {
    std::vector<float> values(kCoordBlock * n);
#pragma omp for schedule(static)
    for (long b = 0; b < blocks; ++b) {
      const std::size_t start = std::size_t(b) * kCoordBlock;
      const std::size_t len = std::min(kCoordBlock, d - start);
      for (std::size_t k = 0; k < n; ++k) {
        const float* src = rows[k].data() + start;
        for (std::size_t j = 0; j < len; ++j) values[j * n + k] = src[j];
      }
      for (std::size_t j = 0; j < len; ++j) {
        out[start + j] = stat(std::span<float>(values.data() + j * n, n));
      }
    }
  }
}

}  // namespace

void coordinateTrimmedMean(Rows rows, std::size_t trim, std::span<float> out) {
  PHALANX_CHECK(2 * trim < rows.size(), "coordinateTrimmedMean: 2 * trim >= rows");
  const std::size_t keep = rows.size() - 2 * trim;
  perCoordinate(rows, out, [&](std::span<float> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (std::size_t i = trim; i < trim + keep; ++i) sum += v[i];
    return float(sum / double(keep));
  });
}

void coordinateMedian(Rows rows, std::span<float> out) {
  perCoordinate(rows, out, [](std::span<float> v) {
    const std::size_t n = v.size(), mid = n / 2;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
    const float upper = v[mid];
    if (n % 2 == 1) return upper;
    const float lower = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid));
    return float((double(lower) + double(upper)) / 2.0);
  });
}

}  // namespace phalanx::kernels
