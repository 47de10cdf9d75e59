// Batched-row kernels on the device (cuda_ops.h): distances, weighted sums, coordinate-wise
// trimmed mean and median. Distance partials are written per block and summed in block order
// by a second kernel, so results are deterministic (no floating-point atomics).
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace phalanx::kernels::cuda {
namespace {

// Scratch for per-block partials (grows, never shrinks).
DeviceArray<double>& partials() {
  static DeviceArray<double> p;
  return p;
}

// out[e] = Σ_b part[b * entries + e], b ascending.
__global__ void sumPartials(const double* part, std::size_t blocks, std::size_t entries,
                            double* out) {
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < entries;
       e += std::size_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (std::size_t b = 0; b < blocks; ++b) s += part[b * entries + e];
    out[e] = s;
  }
}

// --- distances to a center (and the row sum) ---

constexpr int kDistThreads = 128;
constexpr std::size_t kDistSlab =
    88;  // rows per pass: (88 + 1) * 128 floats of shared accumulators

// Rows [r0, r0 + m): part[block][k] = Σ over this block's coordinates of (rows[r0+k] - c)²,
// plus part[block][m] = Σ c² when with_norm. sum (nullable) accumulates the rows in order;
// `first` says whether it starts from zero. A thread's float partial that overflowed (finite
// inputs near FLT_MAX) is recomputed in double; NaN/Inf rows stay non-finite.
__global__ void __launch_bounds__(kDistThreads)
    distancesKernel(const float* center, const float* const* rows, std::size_t r0, std::size_t m,
                    std::size_t d, bool with_norm, float* sum, bool first, double* part) {
  extern __shared__ float acc[];  // acc[k * blockDim + t]
  __shared__ double reduce[kDistThreads / 32];
  const unsigned t = threadIdx.x;
  for (std::size_t k = 0; k <= m; ++k) acc[k * blockDim.x + t] = 0.0f;
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t begin = blockIdx.x * std::size_t(blockDim.x) + t;
  for (std::size_t i = begin; i < d; i += step) {
    const float c = center[i];
    float s = sum == nullptr || first ? 0.0f : sum[i];
    for (std::size_t k = 0; k < m; ++k) {
      const float v = rows[r0 + k][i];
      const float diff = v - c;
      acc[k * blockDim.x + t] = fmaf(diff, diff, acc[k * blockDim.x + t]);
      s += v;
    }
    if (with_norm) acc[m * blockDim.x + t] = fmaf(c, c, acc[m * blockDim.x + t]);
    if (sum != nullptr) sum[i] = s;
  }
  const unsigned lane = t % 32, warp = t / 32;
  for (std::size_t k = 0; k <= m; ++k) {
    if (k == m && !with_norm) break;
    double mine = acc[k * blockDim.x + t];
    if (!isfinite(mine)) {  // redo this thread's coordinates in double
      const float* row = k < m ? rows[r0 + k] : nullptr;
      double redo = 0;
      for (std::size_t i = begin; i < d; i += step) {
        const double diff = row != nullptr ? double(row[i]) - double(center[i]) : double(center[i]);
        redo += diff * diff;
      }
      mine = redo;
    }
    for (int offset = 16; offset > 0; offset /= 2)
      mine += __shfl_down_sync(0xffffffffu, mine, offset);
    if (lane == 0) reduce[warp] = mine;
    __syncthreads();
    if (t == 0) {
      double total = 0;
      for (unsigned w = 0; w < blockDim.x / 32; ++w) total += reduce[w];
      part[blockIdx.x * (m + 1) + k] = total;
    }
    __syncthreads();
  }
}

DeviceArray<double>& reduced() {
  static DeviceArray<double> r;
  return r;
}

double distances(const float* center, const float* const* rows, std::size_t n, std::size_t d,
                 double* out, float* sum) {
  cudaStream_t st = stream();
  const unsigned grid = gridFor(d, kDistThreads) < 132 * 8 ? gridFor(d, kDistThreads) : 132 * 8;
  double norm = 0;
  // Rows in slabs of kDistSlab (shared memory holds one accumulator per row and thread); the
  // center's norm rides with the first slab, which runs even when there are no rows.
  const std::size_t slabs = n == 0 ? 1 : (n + kDistSlab - 1) / kDistSlab;
  for (std::size_t slab = 0; slab < slabs; ++slab) {
    const std::size_t r0 = slab * kDistSlab;
    const std::size_t m = n - r0 < kDistSlab ? n - r0 : kDistSlab;
    const bool with_norm = slab == 0;
    const std::size_t entries = m + 1;  // the last slot: the norm
    partials().resize(std::size_t(grid) * entries);
    const std::size_t shared = entries * kDistThreads * sizeof(float);
    distancesKernel<<<grid, kDistThreads, shared, st>>>(center, rows, r0, m, d, with_norm, sum,
                                                        slab == 0, partials().data());
    PHALANX_CUDA_LAUNCHED("distancesKernel");
    reduced().resize(entries);
    sumPartials<<<gridFor(entries), kThreads, 0, st>>>(partials().data(), grid, entries,
                                                       reduced().data());
    PHALANX_CUDA_LAUNCHED("sumPartials");
    if (m > 0) copyOnDevice(out + r0, reduced().data(), m * sizeof(double));
    if (with_norm) copyToHost(&norm, reduced().data() + m, sizeof(double));
  }
  return norm;
}

// --- pairwise distances: 4 x 4 tiles of row pairs per thread over shared-memory slabs ---

constexpr int kPairThreads = 256;
constexpr int kPairSlab = 128;  // coordinates per slab

// Thread u = p * lanes + lane works on tile pair p = (a, b), a <= b (rows 4a.., 4b..), and on
// the slab's coordinates lane, lane + lanes, ... part[block][i * n + j] gets its sums (i < j).
__global__ void __launch_bounds__(kPairThreads)
    pairwiseKernel(const float* const* rows, int n, std::size_t d, int tiles, int lanes,
                   double* part) {
  __shared__ float slab[kMaxOrderRows][kPairSlab + 1];  // +1: rows fall in different banks
  __shared__ double lane_sums[kPairThreads];
  const int u = int(threadIdx.x);
  const int pairs = tiles * (tiles + 1) / 2;
  const bool active = u < pairs * lanes;
  const int p = active ? u / lanes : 0, lane = active ? u % lanes : 0;
  int a = 0, rest = p;  // p -> (a, b), a <= b, row-major over the upper triangle
  while (rest >= tiles - a) {
    rest -= tiles - a;
    ++a;
  }
  const int b = a + rest;
  double sums[16];
  for (double& s : sums) s = 0;
  for (std::size_t s0 = blockIdx.x * std::size_t(kPairSlab); s0 < d;
       s0 += std::size_t(gridDim.x) * kPairSlab) {
    const int cols = d - s0 < std::size_t(kPairSlab) ? int(d - s0) : kPairSlab;
    __syncthreads();
    for (int idx = u; idx < n * kPairSlab; idx += kPairThreads) {
      const int r = idx / kPairSlab, c = idx % kPairSlab;
      slab[r][c] = c < cols ? rows[r][s0 + c] : 0.0f;
    }
    __syncthreads();
    if (!active) continue;
    float f[16];
    for (float& v : f) v = 0;
    for (int c = lane; c < cols; c += lanes) {
      float xa[4], xb[4];
      for (int q = 0; q < 4; ++q) {
        xa[q] = 4 * a + q < n ? slab[4 * a + q][c] : 0.0f;
        xb[q] = 4 * b + q < n ? slab[4 * b + q][c] : 0.0f;
      }
      for (int q = 0; q < 4; ++q) {
        for (int r = 0; r < 4; ++r) {
          const float diff = xa[q] - xb[r];
          f[q * 4 + r] = fmaf(diff, diff, f[q * 4 + r]);
        }
      }
    }
    for (int e = 0; e < 16; ++e) {
      if (isfinite(f[e])) {
        sums[e] += f[e];
        continue;
      }
      const int i = 4 * a + e / 4, j = 4 * b + e % 4;  // overflowed or non-finite: in double
      if (i >= n || j >= n) continue;
      double redo = 0;
      for (int c = lane; c < cols; c += lanes) {
        const double diff = double(slab[i][c]) - double(slab[j][c]);
        redo += diff * diff;
      }
      sums[e] += redo;
    }
  }
  // The lanes of one tile pair are adjacent threads: the first adds them up in lane order.
  for (int e = 0; e < 16; ++e) {
    __syncthreads();
    lane_sums[u] = active ? sums[e] : 0.0;
    __syncthreads();
    const int i = 4 * a + e / 4, j = 4 * b + e % 4;
    if (active && lane == 0 && i < n && j < n && i < j) {
      double s = 0;
      for (int l = 0; l < lanes; ++l) s += lane_sums[u + l];
      part[blockIdx.x * std::size_t(n * n) + std::size_t(i * n + j)] = s;
    }
  }
}

// Mirrors the upper triangle and zeroes the diagonal.
__global__ void symmetrize(double* out, int n) {
  const int e = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (e >= n * n) return;
  const int i = e / n, j = e % n;
  if (i == j) out[e] = 0.0;
  if (i > j) out[e] = out[j * n + i];
}

// --- weighted sums ---

__global__ void weightedAddKernel(const float* const* rows, const double* weights, std::size_t n,
                                  std::size_t d, float scale, bool accumulate, float* z,
                                  unsigned* bad) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < d;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float acc = accumulate ? z[i] : 0.0f;
    for (std::size_t k = 0; k < n; ++k) {
      const double w = weights[k];
      if (w != 0.0) acc = fmaf(float(w), rows[k][i], acc);  // as the CPU: float weights, fma
    }
    acc *= scale;
    if (bad != nullptr && !isfinite(acc)) *bad = 1;
    z[i] = acc;
  }
}

// --- coordinate-wise order statistics ---

__device__ void insertionSort(float* v, int n) {
  for (int i = 1; i < n; ++i) {
    const float x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = x;
  }
}

__global__ void orderStatKernel(const float* const* rows, int n, std::size_t d, int trim,
                                bool median, float* out) {
  float v[kMaxOrderRows];
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < d;
       i += std::size_t(gridDim.x) * blockDim.x) {
    for (int k = 0; k < n; ++k) v[k] = rows[k][i];
    insertionSort(v, n);
    if (median) {
      const int mid = n / 2;
      out[i] = n % 2 == 1 ? v[mid] : float((double(v[mid - 1]) + double(v[mid])) / 2.0);
    } else {
      const int keep = n - 2 * trim;
      double s = 0;
      for (int k = trim; k < trim + keep; ++k) s += v[k];
      out[i] = float(s / double(keep));
    }
  }
}

__global__ void readKernel(const float4* x, std::size_t n4, float* sink) {
  float s = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 1.2345678f) *sink = s;  // practically never: keeps the loads alive
}

DeviceArray<unsigned>& badFlag() {
  static DeviceArray<unsigned> f(1);
  return f;
}

}  // namespace

void squaredDistancesTo(const float* center, const float* const* rows, std::size_t n, std::size_t d,
                        double* out) {
  distances(center, rows, n, d, out, nullptr);
}

double squaredDistancesAndSum(const float* center, const float* const* rows, std::size_t n,
                              std::size_t d, double* out, float* sum) {
  if (n == 0) fillZero(sum, d * sizeof(float));
  return distances(center, rows, n, d, out, n == 0 ? nullptr : sum);
}

void pairwiseSquaredDistances(const float* const* rows, std::size_t n, std::size_t d, double* out) {
  if (n > kMaxOrderRows) throw std::invalid_argument("cuda::pairwiseSquaredDistances: n > 64");
  if (n == 0) return;
  cudaStream_t st = stream();
  const int tiles = int((n + 3) / 4);
  const int pairs = tiles * (tiles + 1) / 2;
  const int lanes = kPairThreads / pairs > 0 ? kPairThreads / pairs : 1;  // pairs <= 136
  const std::size_t slabs = (d + kPairSlab - 1) / kPairSlab;
  const unsigned grid = unsigned(slabs == 0 ? 1 : (slabs < 132 * 4 ? slabs : 132 * 4));
  const std::size_t entries = n * n;
  partials().resize(std::size_t(grid) * entries);
  fillZero(partials().data(), partials().size() * sizeof(double));
  pairwiseKernel<<<grid, kPairThreads, 0, st>>>(rows, int(n), d, tiles, lanes, partials().data());
  PHALANX_CUDA_LAUNCHED("pairwiseKernel");
  sumPartials<<<gridFor(entries), kThreads, 0, st>>>(partials().data(), grid, entries, out);
  PHALANX_CUDA_LAUNCHED("sumPartials");
  symmetrize<<<unsigned((entries + kThreads - 1) / kThreads), kThreads, 0, st>>>(out, int(n));
  PHALANX_CUDA_LAUNCHED("symmetrize");
}

void weightedSum(const float* const* rows, const double* weights, std::size_t n, std::size_t d,
                 float* out) {
  if (d == 0) return;
  weightedAddKernel<<<gridFor(d), kThreads, 0, stream()>>>(rows, weights, n, d, 1.0f, false, out,
                                                           nullptr);
  PHALANX_CUDA_LAUNCHED("weightedAddKernel");
}

bool accumulateThenScale(const float* const* rows, const double* weights, std::size_t n,
                         std::size_t d, double scale, float* z) {
  if (d == 0) return true;
  unsigned* bad = badFlag().data();
  fillZero(bad, sizeof(unsigned));
  weightedAddKernel<<<gridFor(d), kThreads, 0, stream()>>>(rows, weights, n, d, float(scale), true,
                                                           z, bad);
  PHALANX_CUDA_LAUNCHED("weightedAddKernel");
  unsigned raised = 0;
  copyToHost(&raised, bad, sizeof raised);
  return raised == 0;
}

void coordinateTrimmedMean(const float* const* rows, std::size_t n, std::size_t d, std::size_t trim,
                           float* out) {
  if (n == 0 || n > kMaxOrderRows || 2 * trim >= n) {
    throw std::invalid_argument("cuda::coordinateTrimmedMean: needs 2 * trim < n <= 64");
  }
  if (d == 0) return;
  orderStatKernel<<<gridFor(d), kThreads, 0, stream()>>>(rows, int(n), d, int(trim), false, out);
  PHALANX_CUDA_LAUNCHED("orderStatKernel");
}

void coordinateMedian(const float* const* rows, std::size_t n, std::size_t d, float* out) {
  if (n == 0 || n > kMaxOrderRows)
    throw std::invalid_argument("cuda::coordinateMedian: needs 0 < n <= 64");
  if (d == 0) return;
  orderStatKernel<<<gridFor(d), kThreads, 0, stream()>>>(rows, int(n), d, 0, true, out);
  PHALANX_CUDA_LAUNCHED("orderStatKernel");
}

void readFloor(const float* x, std::size_t n) {
  static DeviceArray<float> sink(1);
  readKernel<<<gridFor(n / 4), kThreads, 0, stream()>>>(reinterpret_cast<const float4*>(x), n / 4,
                                                        sink.data());
  PHALANX_CUDA_LAUNCHED("readKernel");
}

}  // namespace phalanx::kernels::cuda
