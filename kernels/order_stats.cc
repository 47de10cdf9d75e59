#include "kernels/order_stats.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/check.h"
#include "kernels/backend.h"
#include "kernels/simd_clones.h"

namespace phalanx::kernels {

namespace {

// Up to this many rows, coordinate rules sort with a comparator network run across a block of
// coordinates at once (branch-free min/max over contiguous rows, vectorized); above it, each
// coordinate is sorted on its own. On 26 rows x 79,510 the network replaced std::sort per
// coordinate, which made cwtm cells 3.6x slower than NNA ones in the MoNNA grid.
constexpr std::size_t kNetworkRows = 64;
constexpr std::size_t kCoordBlock = 256;

using Comparator = std::pair<std::uint32_t, std::uint32_t>;

// Batcher's odd-even merge sort for n inputs: the network for the next power of two with the
// comparators that touch an index >= n left out (those inputs would be +inf and never move).
std::vector<Comparator> oddEvenMergeNetwork(std::size_t n) {
  std::vector<Comparator> net;
  for (std::size_t p = 1; p < n; p *= 2) {
    for (std::size_t k = p; k >= 1; k /= 2) {
      for (std::size_t j = k % p; j + k < n; j += 2 * k) {
        for (std::size_t i = 0; i < k && i + j + k < n; ++i) {
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) {
            net.emplace_back(std::uint32_t(i + j), std::uint32_t(i + j + k));
          }
        }
      }
    }
  }
  return net;
}

// a[j], b[j] = min, max over a run of coordinates. The ternaries are exactly minps/maxps, so
// this vectorizes without fast-math; values that compare equal (only ±0 among finite floats)
// may swap, which changes no sum.
PHALANX_SIMD_CLONES void compareExchange(float* a, float* b, std::size_t len) {
#pragma omp simd
  for (std::size_t j = 0; j < len; ++j) {
    const float x = a[j], y = b[j];
    a[j] = y < x ? y : x;
    b[j] = x < y ? y : x;
  }
}

// Sorts each coordinate of a block, values[k * len + j] (row k, coordinate j), ascending in k.
void sortBlock(const std::vector<Comparator>& net, float* values, std::size_t len) {
  for (const auto& [a, b] : net) compareExchange(values + a * len, values + b * len, len);
}

// Sorts the rows' values per coordinate, a block of coordinates at a time, and hands each block
// to body(sorted, start, len): sorted[k * len + j] is the k-th smallest value of coordinate
// start + j. The one sorting mechanism of the coordinate rules and sortColumns. Rows must be
// finite (NaN has no place in an order).
template <class Body>
void forSortedBlocks(Rows rows, std::size_t d, Body body) {
  const std::size_t n = rows.size();
  const bool network = n <= kNetworkRows;
  const std::vector<Comparator> net = network ? oddEvenMergeNetwork(n) : std::vector<Comparator>{};
  const long blocks = long((d + kCoordBlock - 1) / kCoordBlock);
#pragma omp parallel
  {
    std::vector<float> values(kCoordBlock * n), column(n);
#pragma omp for schedule(static)
    for (long b = 0; b < blocks; ++b) {
      const std::size_t start = std::size_t(b) * kCoordBlock;
      const std::size_t len = std::min(kCoordBlock, d - start);
      for (std::size_t k = 0; k < n; ++k) {
        std::copy_n(rows[k].data() + start, len, values.data() + k * len);
      }
      if (network) {
        sortBlock(net, values.data(), len);
      } else {
        for (std::size_t j = 0; j < len; ++j) {
          for (std::size_t k = 0; k < n; ++k) column[k] = values[k * len + j];
          std::sort(column.begin(), column.end());
          for (std::size_t k = 0; k < n; ++k) values[k * len + j] = column[k];
        }
      }
      body(static_cast<const float*>(values.data()), start, len);
    }
  }
}

// forSortedBlocks for rules with one output per coordinate: stat(sorted, len, out block).
template <class Stat>
void perCoordinateSorted(Rows rows, std::span<float> out, Stat stat) {
  PHALANX_CHECK(!rows.empty() && commonLength(rows) == out.size(),
                "coordinate rule: shape mismatch");
  forSortedBlocks(rows, out.size(), [&](const float* sorted, std::size_t start, std::size_t len) {
    stat(sorted, len, out.data() + start);
  });
}

}  // namespace

void coordinateTrimmedMean(Rows rows, std::size_t trim, std::span<float> out) {
  PHALANX_CHECK(2 * trim < rows.size(), "coordinateTrimmedMean: 2 * trim >= rows");
  const std::size_t keep = rows.size() - 2 * trim;
  PHALANX_OFFLOAD(offload::fitsRowKernels(rows.size()) && commonLength(rows) == out.size()
                      ? rows.size() * out.size()
                      : 0,
                  offload::coordinateTrimmedMean(rows, trim, out));
  perCoordinateSorted(rows, out, [&](const float* sorted, std::size_t len, float* z) {
    double sum[kCoordBlock] = {};
    for (std::size_t k = trim; k < trim + keep; ++k) {  // ascending, per coordinate
      const float* v = sorted + k * len;
      for (std::size_t j = 0; j < len; ++j) sum[j] += v[j];
    }
    for (std::size_t j = 0; j < len; ++j) z[j] = float(sum[j] / double(keep));
  });
}

void coordinateMedian(Rows rows, std::span<float> out) {
  PHALANX_OFFLOAD(offload::fitsRowKernels(rows.size()) && commonLength(rows) == out.size()
                      ? rows.size() * out.size()
                      : 0,
                  offload::coordinateMedian(rows, out));
  const std::size_t n = rows.size(), mid = n / 2;
  perCoordinateSorted(rows, out, [&](const float* sorted, std::size_t len, float* z) {
    const float* upper = sorted + mid * len;
    if (n % 2 == 1) {
      std::copy_n(upper, len, z);
      return;
    }
    const float* lower = sorted + (mid - 1) * len;
    for (std::size_t j = 0; j < len; ++j) z[j] = float((double(lower[j]) + double(upper[j])) / 2.0);
  });
}

SortedColumns sortColumns(Rows rows) {
  SortedColumns s;
  s.rows = rows.size();
  s.dim = commonLength(rows);
  s.values.resize(s.rows * s.dim);
  forSortedBlocks(rows, s.dim, [&](const float* sorted, std::size_t start, std::size_t len) {
    for (std::size_t j = 0; j < len; ++j) {
      float* column = s.values.data() + (start + j) * s.rows;
      for (std::size_t k = 0; k < s.rows; ++k) column[k] = sorted[k * len + j];
    }
  });
  return s;
}

namespace {

// The merged column: the sorted values with `copies` copies of `a` placed before the first
// value >= a (where among equal values they go does not change any value read).
struct MergedColumn {
  const float* column;
  std::size_t at, copies;
  float a;
  float operator[](std::size_t i) const {
    return i < at ? column[i] : (i < at + copies ? a : column[i - copies]);
  }
};

template <class Stat>
void withCopies(const SortedColumns& s, std::span<const float> extra, std::size_t copies,
                std::span<float> out, Stat stat) {
  PHALANX_CHECK(extra.size() == s.dim && out.size() == s.dim, "withCopies: length mismatch");
  const long d = long(s.dim);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < d; ++i) {
    const float* column = s.values.data() + std::size_t(i) * s.rows;
    const float a = extra[std::size_t(i)];
    const std::size_t at = std::size_t(std::lower_bound(column, column + s.rows, a) - column);
    out[std::size_t(i)] = stat(MergedColumn{column, at, copies, a});
  }
}

}  // namespace

void trimmedMeanWithCopies(const SortedColumns& sorted, std::span<const float> extra,
                           std::size_t copies, std::size_t trim, std::span<float> out) {
  const std::size_t n = sorted.rows + copies;
  PHALANX_CHECK(2 * trim < n, "trimmedMeanWithCopies: 2 * trim >= rows");
  const std::size_t keep = n - 2 * trim;
  withCopies(sorted, extra, copies, out, [&](const MergedColumn& v) {
    double sum = 0;  // in sorted order, as coordinateTrimmedMean
    for (std::size_t i = trim; i < trim + keep; ++i) sum += v[i];
    return float(sum / double(keep));
  });
}

void medianWithCopies(const SortedColumns& sorted, std::span<const float> extra, std::size_t copies,
                      std::span<float> out) {
  const std::size_t n = sorted.rows + copies, mid = n / 2;
  PHALANX_CHECK(n > 0, "medianWithCopies: no rows");
  withCopies(sorted, extra, copies, out, [&](const MergedColumn& v) {
    if (n % 2 == 1) return v[mid];
    return float((double(v[mid - 1]) + double(v[mid])) / 2.0);
  });
}

}  // namespace phalanx::kernels
