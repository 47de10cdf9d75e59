#include "kernels/batch_ops.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "base/check.h"
#include "kernels/backend.h"
#include "kernels/row_distances.h"
#include "kernels/row_dots.h"
#include "kernels/simd_clones.h"
#include "kernels/vector_ops.h"

namespace phalanx::kernels {
namespace {

// Coordinates per block: the center's block stays in cache while each row streams past.
// Measured on 32 x 25.6M rows: 16K beat 4K (more stream switches) and 64K for single rows;
// the grouped distance passes below do as well or better at 8K.
constexpr std::size_t kBlock = 16384;
constexpr std::size_t kDistanceBlock = 8192;

using ConstArray = Eigen::Map<const Eigen::ArrayXf>;

ConstArray block(std::span<const float> v, std::size_t start, std::size_t len) {
  return ConstArray(v.data() + start, Eigen::Index(len));
}

std::size_t blockCount(std::size_t d, std::size_t block = kBlock) {
  return (d + block - 1) / block;
}

// Runs body(start, len) over coordinate blocks in parallel and sums each thread's `partials`
// (one double per output) into `out`.
template <class Body>
void reduceOverBlocks(std::size_t d, std::span<double> out, Body body, std::size_t block = kBlock) {
  std::fill(out.begin(), out.end(), 0.0);
  const long blocks = long(blockCount(d, block));
#pragma omp parallel
  {
    std::vector<double> partial(out.size(), 0.0);
#pragma omp for schedule(static)
    for (long b = 0; b < blocks; ++b) {
      const std::size_t start = std::size_t(b) * block;
      body(start, std::min(block, d - start), partial);
    }
#pragma omp critical
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += partial[i];
  }
}

// Squared distances are summed in float over runs of kRun coordinates (per SIMD lane) and in
// double across runs; a run whose float sum is not finite is redone in double, so finite rows
// near FLT_MAX stay finite and only NaN/Inf rows come out non-finite. Long runs matter: each
// run ends in a horizontal sum, which at 512 cost a quarter of the pass. Relative error: about
// 1e-6 when vectorized (a run spreads over at least 4 lanes), below 1e-5 when not.

constexpr std::size_t kRun = 4096;

// Rows are taken kGroup at a time: c (and z) are then read once per group instead of once per
// row, and the group's sums are independent chains that hide the add latency. Measured on
// 32 x 25.6M rows: 4 beat 1 (c and z traffic) and 8 (registers).
constexpr std::size_t kGroup = 4;  // the group kernels below spell out four rows

PHALANX_SIMD_CLONES float clonedSquaredDistance(const float* a, const float* b, std::size_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t i = 0; i < n; ++i) {
    const float t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

// One run's squared distances in float of up to eight rows to c: on AVX-512 in
// detail::runDistances's order (one row alone or eight side by side, the same chains),
// elsewhere row by row as the compiler vectorizes the one-row loop.
void runSquaredDistances(const float* const* a, std::size_t count, const float* c, std::size_t n,
                         float* out) {
  if (detail::vectorRunDistances()) return detail::runDistances(a, count, c, n, out);
  for (std::size_t g = 0; g < count; ++g) out[g] = clonedSquaredDistance(a[g], c, n);
}

// The distances of a group to c over one run; with z, also z += the group's sum.
template <bool kAdd>
PHALANX_SIMD_CLONES void runGroupDistances(const float* const* a, const float* c, float* z,
                                           std::size_t n, float* out) {
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (std::size_t i = 0; i < n; ++i) {
    const float ci = c[i];
    const float t0 = a0[i] - ci, t1 = a1[i] - ci, t2 = a2[i] - ci, t3 = a3[i] - ci;
    s0 += t0 * t0;
    s1 += t1 * t1;
    s2 += t2 * t2;
    s3 += t3 * t3;
    if constexpr (kAdd) z[i] += (a0[i] + a1[i]) + (a2[i] + a3[i]);
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

// z += (a + a) + (a + a), `times` times: what `times` groups of four copies of one row add,
// one after the other, to the sum of runGroupDistances<true> (the same operations, in order).
// Chunks of 64 coordinates held in registers while every group's sum is added: z is read and
// written once, and the chunk's adds are 64 independent chains, vectorized.
PHALANX_SIMD_CLONES void runRepeatedGroupAdd(const float* a, float* z, std::size_t n,
                                             std::size_t times) {
  constexpr std::size_t kChunk = 64;
  std::size_t at = 0;
  for (; at + kChunk <= n; at += kChunk) {
    float s[kChunk], group[kChunk];
#pragma omp simd
    for (std::size_t j = 0; j < kChunk; ++j) {
      const float x = a[at + j];
      group[j] = (x + x) + (x + x);
      s[j] = z[at + j];
    }
    for (std::size_t t = 0; t < times; ++t) {
#pragma omp simd
      for (std::size_t j = 0; j < kChunk; ++j) s[j] += group[j];
    }
#pragma omp simd
    for (std::size_t j = 0; j < kChunk; ++j) z[at + j] = s[j];
  }
  for (; at < n; ++at) {
    const float group = (a[at] + a[at]) + (a[at] + a[at]);
    for (std::size_t t = 0; t < times; ++t) z[at] += group;
  }
}

PHALANX_SIMD_CLONES void runAxpy(float w, const float* x, float* z, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) z[i] += w * x[i];
}

// z += Σ_g w[g] * a[g] over one run, for a group: z is read and written once, not per row.
PHALANX_SIMD_CLONES void runGroupAxpy(const float* const* a, const float* w, float* z,
                                      std::size_t n) {
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    z[i] += (w0 * a0[i] + w1 * a1[i]) + (w2 * a2[i] + w3 * a3[i]);
  }
}

// A run's squared distance in double, for runs whose float sum overflowed.
double exactRunDistance(const float* a, const float* b, std::size_t n) {
  const ConstArray x(a, Eigen::Index(n)), y(b, Eigen::Index(n));
  return (x.cast<double>() - y.cast<double>()).square().sum();
}

// out[g] = Σ over the block of ‖a[g] − c‖² for g < count ≤ 8: each run's float sum (redone in
// double when it is not finite) added in double, run after run.
void blockSquaredDistances(const float* const* a, std::size_t count, const float* c,
                           std::size_t len, double* out) {
  std::fill(out, out + count, 0.0);
  for (std::size_t at = 0; at < len; at += kRun) {
    const std::size_t n = std::min(kRun, len - at);
    const float* run[8];
    for (std::size_t g = 0; g < count; ++g) run[g] = a[g] + at;
    float fast[8];
    runSquaredDistances(run, count, c + at, n, fast);
    for (std::size_t g = 0; g < count; ++g) {
      out[g] += std::isfinite(fast[g]) ? double(fast[g]) : exactRunDistance(run[g], c + at, n);
    }
  }
}

double blockSquaredDistance(const float* a, const float* b, std::size_t len) {
  double out;
  blockSquaredDistances(&a, 1, b, len, &out);
  return out;
}

// Rows that are one buffer (an attacker's copies of its line search's candidate) share one
// entry: `rows` holds the distinct buffers in order of first appearance, slot[k] row k's.
struct DistinctRows {
  std::vector<std::span<const float>> rows;
  std::vector<std::size_t> slot;
};

DistinctRows distinctRows(Rows rows) {
  DistinctRows d;
  d.slot.resize(rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    std::size_t s = 0;
    while (s < d.rows.size() && d.rows[s].data() != rows[k].data()) ++s;
    if (s == d.rows.size()) d.rows.push_back(rows[k]);
    d.slot[k] = s;
  }
  return d;
}

// Whether the group of rows from k is one buffer four times.
bool oneBufferGroup(Rows rows, std::size_t k) {
  for (std::size_t g = 1; g < kGroup; ++g) {
    if (rows[k + g].data() != rows[k].data()) return false;
  }
  return true;
}

// acc[k] += ‖rows[k] - c‖² over one block; with z (not null), also z += Σ_k rows[k] there.
// Rows that are one buffer (an attacker's f copies of its vector) are measured once: a group of
// four copies that follows the same group makes the same call, so each row's acc (equal to the
// first group's, block after block) is copied and its sum added again in the same order; a
// tail row that is an earlier tail row's buffer gets that row's distance.
void blockDistances(Rows rows, const float* c, float* z, std::size_t start, std::size_t len,
                    std::vector<double>& acc) {
  std::size_t k = 0;
  for (; k + kGroup <= rows.size(); k += kGroup) {
    if (k >= kGroup && oneBufferGroup(rows, k) && oneBufferGroup(rows, k - kGroup) &&
        rows[k].data() == rows[k - kGroup].data()) {
      std::size_t end = k + kGroup;  // the run of such groups
      while (end + kGroup <= rows.size() && oneBufferGroup(rows, end) &&
             rows[end].data() == rows[k].data()) {
        end += kGroup;
      }
      for (std::size_t j = k; j < end; ++j) acc[j] = acc[k - kGroup + (j - k) % kGroup];
      if (z) runRepeatedGroupAdd(rows[k].data() + start, z, len, (end - k) / kGroup);
      k = end - kGroup;
      continue;
    }
    for (std::size_t at = 0; at < len; at += kRun) {
      const std::size_t n = std::min(kRun, len - at);
      const float* a[kGroup];
      for (std::size_t g = 0; g < kGroup; ++g) a[g] = rows[k + g].data() + start + at;
      float fast[kGroup];
      if (z) {
        runGroupDistances<true>(a, c + at, z + at, n, fast);
      } else {
        runGroupDistances<false>(a, c + at, nullptr, n, fast);
      }
      for (std::size_t g = 0; g < kGroup; ++g) {
        acc[k + g] += std::isfinite(fast[g]) ? double(fast[g]) : exactRunDistance(a[g], c + at, n);
      }
    }
  }
  const std::size_t tail = k;
  for (; k < rows.size(); ++k) {
    const float* a = rows[k].data() + start;
    std::size_t same = tail;
    while (same < k && rows[same].data() != rows[k].data()) ++same;
    acc[k] = same < k ? acc[same] : acc[k] + blockSquaredDistance(a, c, len);
    if (z) runAxpy(1.0f, a, z, len);
  }
}

// z += Σ_k weights[k] * rows[k] over one block, skipping rows whose weight is exactly 0.
void blockWeightedAdd(Rows rows, std::span<const double> weights, float* z, std::size_t start,
                      std::size_t len) {
  const float* a[kGroup];
  float w[kGroup];
  std::size_t filled = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (weights[k] == 0.0) continue;
    a[filled] = rows[k].data() + start;
    w[filled] = float(weights[k]);
    if (++filled == kGroup) {
      runGroupAxpy(a, w, z, len);
      filled = 0;
    }
  }
  for (std::size_t g = 0; g < filled; ++g) runAxpy(w[g], a[g], z, len);
}

// Runs body(z block, start, len) over blocks of the output in parallel; true when every call
// returned true. Larger blocks than the reductions: the output block stays in L2 while each
// row is streamed in long runs, which the hardware prefetchers follow better across many rows.
template <class Body>
bool overOutputBlocks(std::span<float> out, Body body) {
  constexpr std::size_t kSumBlock = 4 * kBlock;
  const std::size_t d = out.size();
  const long blocks = long(blockCount(d, kSumBlock));
  bool all = true;
#pragma omp parallel for schedule(static) reduction(&& : all)
  for (long b = 0; b < blocks; ++b) {
    const std::size_t start = std::size_t(b) * kSumBlock;
    const std::size_t len = std::min(kSumBlock, d - start);
    all = body(out.data() + start, start, len) && all;
  }
  return all;
}

// squaredDistancesAndSum's CPU pass (lengths checked by the caller).
double distancesAndSumPass(std::span<const float> center, Rows rows, std::span<double> out,
                           std::span<float> sum) {
  const std::size_t n = rows.size();
  std::vector<double> sums(n + 1);  // the distances, then ‖center‖²
  reduceOverBlocks(
      sum.size(), sums,
      [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
        // The sum's block belongs to this thread; zeroing it here (in cache) instead of in a
        // separate pass saves a write of the whole vector.
        float* z = sum.data() + start;
        std::fill(z, z + len, 0.0f);
        blockDistances(rows, center.data() + start, z, start, len, acc);
        acc[n] += double(block(center, start, len).square().sum());
      },
      kDistanceBlock);
  std::copy(sums.begin(), sums.begin() + std::ptrdiff_t(n), out.begin());
  return sums[n];
}

}  // namespace

std::size_t commonLength(Rows rows) {
  if (rows.empty()) return 0;
  const std::size_t d = rows[0].size();
  for (const auto& r : rows) PHALANX_CHECK(r.size() == d, "batch_ops: rows differ in length");
  return d;
}

void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out) {
  const std::size_t d = commonLength(rows);
  PHALANX_CHECK(out.size() == rows.size(), "squaredDistancesTo: output size");
  PHALANX_CHECK(rows.empty() || center.size() == d, "squaredDistancesTo: center length");
  PHALANX_OFFLOAD(rows.size() * d, offload::squaredDistancesTo(center, rows, out));
  reduceOverBlocks(
      d, out,
      [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
        blockDistances(rows, center.data() + start, nullptr, start, len, acc);
      },
      kDistanceBlock);
}

double squaredDistancesAndSum(std::span<const float> center, Rows rows, std::span<double> out,
                              std::span<float> sum) {
  const std::size_t d = commonLength(rows);
  const std::size_t n = rows.size();
  PHALANX_CHECK(out.size() == n, "squaredDistancesAndSum: output size");
  PHALANX_CHECK(sum.size() == d && (rows.empty() || center.size() == d),
                "squaredDistancesAndSum: lengths");
  PHALANX_OFFLOAD(n * d, offload::squaredDistancesAndSum(center, rows, out, sum));
  return distancesAndSumPass(center, rows, out, sum);
}

std::size_t RowPrefix::held(std::size_t rows) const {
  return std::min(unchanged_, rows) / kGroup * kGroup;
}

bool RowPrefix::Held::holds(std::span<const float> c, Rows leading) const {
  return center == c.data() && rows.size() == leading.size() &&
         std::equal(leading.begin(), leading.end(), rows.begin(),
                    [](std::span<const float> r, const float* q) { return r.data() == q; });
}

void RowPrefix::Held::keep(std::span<const float> c, Rows leading) {
  center = c.data();
  rows.clear();
  for (const auto& r : leading) rows.push_back(r.data());
  distances.resize(leading.size());
}

double squaredDistancesAndSum(std::span<const float> center, Rows rows, std::span<double> out,
                              std::span<float> sum, RowPrefix* prefix) {
  const std::size_t d = commonLength(rows);
  const std::size_t n = rows.size();
  const std::size_t held = prefix ? prefix->held(n) : 0;
  if (held == 0 || offloading(n * d)) return squaredDistancesAndSum(center, rows, out, sum);
  PHALANX_CHECK(out.size() == n, "squaredDistancesAndSum: output size");
  PHALANX_CHECK(sum.size() == d && center.size() == d, "squaredDistancesAndSum: lengths");
  RowPrefix& p = *prefix;
  const Rows leading = rows.first(held);
  if (!p.summed_.holds(center, leading) || p.sum_.size() != d) {
    // The full pass's work on the leading rows alone, kept.
    p.summed_.keep(center, leading);
    p.sum_.resize(d);
    p.center_norm_ = distancesAndSumPass(center, leading, p.summed_.distances, p.sum_);
  }
  // The rest, added to the held sum in the order the full pass adds them.
  const Rows rest = rows.subspan(held);
  std::vector<double> sums(rest.size());
  reduceOverBlocks(
      d, sums,
      [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
        float* z = sum.data() + start;
        std::copy(p.sum_.begin() + std::ptrdiff_t(start),
                  p.sum_.begin() + std::ptrdiff_t(start + len), z);
        blockDistances(rest, center.data() + start, z, start, len, acc);
      },
      kDistanceBlock);
  std::copy(p.summed_.distances.begin(), p.summed_.distances.end(), out.begin());
  std::copy(sums.begin(), sums.end(), out.begin() + std::ptrdiff_t(held));
  return p.center_norm_;
}

void squaredDistancesTo(std::span<const float> center, Rows rows, std::span<double> out,
                        RowPrefix* prefix) {
  const std::size_t d = commonLength(rows);
  const std::size_t n = rows.size();
  const std::size_t held = prefix ? prefix->held(n) : 0;
  if (held == 0 || offloading(n * d)) return squaredDistancesTo(center, rows, out);
  PHALANX_CHECK(out.size() == n, "squaredDistancesTo: output size");
  PHALANX_CHECK(center.size() == d, "squaredDistancesTo: center length");
  RowPrefix& p = *prefix;
  const Rows leading = rows.first(held);
  if (!p.plain_.holds(center, leading)) {
    p.plain_.keep(center, leading);
    squaredDistancesTo(center, leading, p.plain_.distances);
  }
  // Each row's distance is its own chain over the blocks, and the rest's groups start where the
  // full pass's do (held is a whole number of groups): the same values as one call on all rows.
  std::copy(p.plain_.distances.begin(), p.plain_.distances.end(), out.begin());
  squaredDistancesTo(center, rows.subspan(held), out.subspan(held));
}

KnownDistances::KnownDistances(Rows rows)
    : length_(commonLength(rows)), dist_(rows.size() * rows.size()) {
  rows_.reserve(rows.size());
  for (const auto& r : rows) rows_.push_back(r.data());
  pairwiseSquaredDistances(rows, dist_);
}

std::optional<double> KnownDistances::find(std::span<const float> a,
                                           std::span<const float> b) const {
  if (a.size() != length_ || b.size() != length_) return std::nullopt;
  const auto at = [&](const float* p) {
    return std::size_t(std::find(rows_.begin(), rows_.end(), p) - rows_.begin());
  };
  const std::size_t i = at(a.data()), j = at(b.data()), n = rows_.size();
  if (i == n || j == n) return std::nullopt;
  return dist_[i * n + j];
}

namespace {

// out = the pairwise matrix of rows (distinct buffers), the pairs `known` holds taken from it.
void measurePairs(Rows rows, std::span<double> out, const KnownDistances* known) {
  const std::size_t n = rows.size();
  const std::size_t d = commonLength(rows);
  // A device measures every pair itself (its own rounding); `known` serves the CPU path.
  PHALANX_OFFLOAD(offload::fitsRowKernels(n) ? n * d : 0,
                  offload::pairwiseSquaredDistances(rows, out));
  std::vector<std::pair<std::size_t, std::size_t>> measure;
  std::vector<std::pair<std::size_t, double>> taken;  // (i * n + j, its known distance)
  for (std::size_t j = 1; j < n; ++j) {               // column by column, for the groups below
    for (std::size_t i = 0; i < j; ++i) {
      if (const auto v = known ? known->find(rows[i], rows[j]) : std::nullopt) {
        taken.emplace_back(i * n + j, *v);
      } else {
        measure.emplace_back(i, j);
      }
    }
  }
  // The pairs by their second row, eight first rows at a time against it (the pairs of an
  // attacker's candidate with every honest row, in a line search, are one column).
  std::vector<std::pair<std::size_t, std::size_t>> groups;  // [begin, end) in `measure`
  for (std::size_t k = 0; k < measure.size();) {
    std::size_t end = k + 1;
    while (end < measure.size() && end - k < 8 && measure[end].second == measure[k].second) ++end;
    groups.emplace_back(k, end);
    k = end;
  }
  reduceOverBlocks(d, out, [&](std::size_t start, std::size_t len, std::vector<double>& acc) {
    for (const auto& [begin, end] : groups) {
      const float* a[8];
      double got[8];
      for (std::size_t k = begin; k < end; ++k)
        a[k - begin] = rows[measure[k].first].data() + start;
      blockSquaredDistances(a, end - begin, rows[measure[begin].second].data() + start, len, got);
      for (std::size_t k = begin; k < end; ++k) {
        acc[measure[k].first * n + measure[k].second] += got[k - begin];
      }
    }
  });
  for (const auto& [at, v] : taken) out[at] = v;
  for (std::size_t i = 0; i < n; ++i) {
    out[i * n + i] = 0.0;
    for (std::size_t j = i + 1; j < n; ++j) out[j * n + i] = out[i * n + j];
  }
}

}  // namespace

void pairwiseSquaredDistances(Rows rows, std::span<double> out, const KnownDistances* known) {
  const std::size_t n = rows.size();
  static_cast<void>(commonLength(rows));  // every row one length, copies included
  PHALANX_CHECK(out.size() == n * n, "pairwiseSquaredDistances: output size");
  // Rows that are one buffer are measured once: an attacker's line search runs the rule on f
  // copies of its candidate, which would make the pass grow with f². Each pair's distance is
  // computed the same way whichever other rows are present, so the result is bit for bit the
  // one without the shortcut (two copies of a non-finite row: NaN, as a - a gives there). The
  // same holds for the pairs `known` already measured.
  const auto [distinct, slot] = distinctRows(rows);
  const std::size_t m = distinct.size();
  std::vector<double> inner(m * m);
  measurePairs(distinct, inner, known);
  std::vector<double> self(m, 0.0);     // a row's distance to another copy of itself
  std::vector<std::size_t> uses(m, 0);  // rows that are each buffer
  for (const std::size_t s : slot) ++uses[s];
  for (std::size_t s = 0; s < m; ++s) {
    if (uses[s] > 1 && !allFinite(distinct[s])) self[s] = std::numeric_limits<double>::quiet_NaN();
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      out[i * n + j] = i == j               ? 0.0
                       : slot[i] == slot[j] ? self[slot[i]]
                                            : inner[slot[i] * m + slot[j]];
    }
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

void dots(Rows rows, std::span<const float> y, std::span<double> out) {
  PHALANX_CHECK(out.size() == rows.size(), "dots: output size");
  PHALANX_CHECK(rows.empty() || commonLength(rows) == y.size(), "dots: row length");
  // Rows that are one buffer (an attacker's copies of its candidate) are summed once: each row's
  // sum is its own chain, so the copy's value is the one it would have got.
  const auto [distinct, slot] = distinctRows(rows);
  // Sixteen rows at a time while more than eight are left, then eight (detail::eightDots); a
  // group that is not full is padded with repeats of its last row, whose results are dropped.
  // One row left is dot()'s.
  constexpr std::size_t kChains = 8;
  std::vector<double> sums(distinct.size());
  std::size_t k = 0;
  while (!y.empty() && distinct.size() - k > 1) {
    const std::size_t left = distinct.size() - k;
    const std::size_t width = left > kChains ? 2 * kChains : kChains;
    const std::size_t take = std::min(left, width);
    const float* r[2 * kChains];
    for (std::size_t g = 0; g < width; ++g) r[g] = distinct[k + std::min(g, take - 1)].data();
    double group[2 * kChains];
    (width > kChains ? detail::sixteenDots : detail::eightDots)(r, y.data(), y.size(), group);
    std::copy(group, group + take, sums.begin() + std::ptrdiff_t(k));
    k += take;
  }
  for (; k < distinct.size(); ++k) sums[k] = dot(distinct[k], y);
  for (std::size_t i = 0; i < rows.size(); ++i) out[i] = sums[slot[i]];
}

void weightedSum(Rows rows, std::span<const double> weights, std::span<float> out) {
  PHALANX_CHECK(weights.size() == rows.size(), "weightedSum: one weight per row");
  PHALANX_CHECK(rows.empty() || commonLength(rows) == out.size(), "weightedSum: output length");
  PHALANX_OFFLOAD(rows.size() * out.size(), offload::weightedSum(rows, weights, out));
  overOutputBlocks(out, [&](float* z, std::size_t start, std::size_t len) {
    std::fill(z, z + len, 0.0f);
    blockWeightedAdd(rows, weights, z, start, len);
    return true;
  });
}

bool accumulateThenScale(Rows rows, std::span<const double> weights, double scale,
                         std::span<float> z) {
  PHALANX_CHECK(weights.size() == rows.size(), "accumulateThenScale: one weight per row");
  PHALANX_CHECK(rows.empty() || commonLength(rows) == z.size(),
                "accumulateThenScale: output length");
  PHALANX_OFFLOAD(rows.size() * z.size(), offload::accumulateThenScale(rows, weights, scale, z));
  return overOutputBlocks(z, [&](float* out, std::size_t start, std::size_t len) {
    blockWeightedAdd(rows, weights, out, start, len);
    Eigen::Map<Eigen::ArrayXf> block_out(out, Eigen::Index(len));
    block_out *= float(scale);
    return bool(block_out.isFinite().all());
  });
}

}  // namespace phalanx::kernels
