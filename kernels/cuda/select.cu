// Top-k selection on the device (cuda_ops.h): the CPU's sampled threshold, CUB's compaction
// and stable radix sort, so the result is exactly kernels::topkIndices's.
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <stdexcept>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace phalanx::kernels::cuda {
namespace {

// |x|'s bit pattern: orders like |x| for finite values, NaN above +Inf (select.h).
__device__ __forceinline__ std::uint32_t magnitudeKey(float v) {
  return __float_as_uint(v) & 0x7fffffffu;
}
constexpr int kKeyBits = 31;  // keys never use the top bit: one radix pass fewer

__global__ void gatherSampleKeys(const float* x, std::size_t start, std::size_t stride,
                                 std::size_t m, std::uint32_t* keys) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < m;
       i += std::size_t(gridDim.x) * blockDim.x) {
    keys[i] = magnitudeKey(x[start + i * stride]);
  }
}

__global__ void gatherKeys(const float* x, const std::uint32_t* index, const std::uint32_t* count,
                           std::uint32_t* keys) {
  const std::size_t c = *count;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < c;
       i += std::size_t(gridDim.x) * blockDim.x) {
    keys[i] = magnitudeKey(x[index[i]]);
  }
}

struct AtLeast {
  const float* x;
  std::uint32_t threshold;
  __device__ bool operator()(std::uint32_t i) const { return magnitudeKey(x[i]) >= threshold; }
};

// CPU constants (select.cc): the same sample makes the same threshold guesses.
constexpr std::size_t kStride = 61, kStart = kStride / 2;

std::size_t sampleCount(std::size_t n, std::size_t start, std::size_t stride) {
  return start >= n ? 0 : (n - start + stride - 1) / stride;
}

void ensureTemp(TopkScratch& s, std::size_t bytes) {
  if (s.temp.size() < bytes) s.temp.resize(bytes);
}

}  // namespace

void topkIndices(const float* x, std::size_t n, std::size_t k, std::uint32_t* out, TopkScratch& s) {
  if (k > n) throw std::invalid_argument("cuda::topkIndices: k exceeds the length");
  if (n > 0xffffffffull) throw std::invalid_argument("cuda::topkIndices: more than 2^32 entries");
  if (k == 0) return;
  cudaStream_t st = stream();
  const std::size_t m = k * 8 < n ? sampleCount(n, kStart, kStride) : 0;
  std::size_t rank = m == 0 ? 0 : std::min(m, 2 * k * m / n + 8);

  // The sample sorted once, descending: the r-th largest is sorted[r - 1] for every retry.
  if (m > 0) {
    s.sample.resize(m);
    s.sorted_keys.resize(m);
    gatherSampleKeys<<<gridFor(m), kThreads, 0, st>>>(x, kStart, kStride, m, s.sample.data());
    PHALANX_CUDA_LAUNCHED("gatherSampleKeys");
    std::size_t bytes = 0;
    PHALANX_CUDA(cub::DeviceRadixSort::SortKeysDescending(
        nullptr, bytes, s.sample.data(), s.sorted_keys.data(), m, 0, kKeyBits, st));
    ensureTemp(s, bytes);
    PHALANX_CUDA(cub::DeviceRadixSort::SortKeysDescending(
        s.temp.data(), bytes, s.sample.data(), s.sorted_keys.data(), m, 0, kKeyBits, st));
  }

  s.candidate_index.resize(n);  // worst case: the threshold-0 fallback keeps everything
  s.count.resize(1);
  std::uint32_t count = 0;
  const thrust::counting_iterator<std::uint32_t> indices(0);
  while (true) {
    std::uint32_t threshold = 0;  // keeps everything: the exact fallback
    if (rank > 0 && rank < m) copyToHost(&threshold, s.sorted_keys.data() + (rank - 1), 4);
    const AtLeast keep{x, threshold};
    std::size_t bytes = 0;
    PHALANX_CUDA(cub::DeviceSelect::If(nullptr, bytes, indices, s.candidate_index.data(),
                                       s.count.data(), n, keep, st));
    ensureTemp(s, bytes);
    PHALANX_CUDA(cub::DeviceSelect::If(s.temp.data(), bytes, indices, s.candidate_index.data(),
                                       s.count.data(), n, keep, st));
    copyToHost(&count, s.count.data(), 4);
    if (count >= k) break;
    if (threshold == 0)
      throw std::logic_error("cuda::topkIndices: every entry kept yet fewer than k");
    rank = rank * 4 >= m ? 0 : rank * 4;
  }
  if (count == k) {
    copyOnDevice(out, s.candidate_index.data(), k * 4);
    return;
  }
  // Larger key first; CUB's radix sort is stable, so equal keys keep ascending index order.
  s.candidate_keys.resize(count);
  s.sorted_keys.resize(std::max<std::size_t>(s.sorted_keys.size(), count));
  s.sorted_index.resize(count);
  gatherKeys<<<gridFor(count), kThreads, 0, st>>>(x, s.candidate_index.data(), s.count.data(),
                                                  s.candidate_keys.data());
  PHALANX_CUDA_LAUNCHED("gatherKeys");
  std::size_t bytes = 0;
  PHALANX_CUDA(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, bytes, s.candidate_keys.data(), s.sorted_keys.data(), s.candidate_index.data(),
      s.sorted_index.data(), count, 0, kKeyBits, st));
  ensureTemp(s, bytes);
  PHALANX_CUDA(cub::DeviceRadixSort::SortPairsDescending(
      s.temp.data(), bytes, s.candidate_keys.data(), s.sorted_keys.data(), s.candidate_index.data(),
      s.sorted_index.data(), count, 0, kKeyBits, st));
  // The k winners back into ascending index order.
  const int index_bits = 32 - __builtin_clz(std::uint32_t(n - 1) | 1u);
  bytes = 0;
  PHALANX_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, s.sorted_index.data(), out, k, 0,
                                              index_bits, st));
  ensureTemp(s, bytes);
  PHALANX_CUDA(cub::DeviceRadixSort::SortKeys(s.temp.data(), bytes, s.sorted_index.data(), out, k,
                                              0, index_bits, st));
}

}  // namespace phalanx::kernels::cuda
