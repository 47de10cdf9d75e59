#include "kernels/select.h"

#include <omp.h>

#include <algorithm>
#include <bit>

#include "kernels/check.h"

namespace phalanx::kernels {
namespace {

constexpr std::size_t kBlock = 16;           // one branch per 16 entries in the scan
constexpr std::size_t kParallelMin = 1 << 16;  // below this, threads cost more than they save

// Appends the indices in [begin, end) whose key >= threshold. Most blocks hold no hit, so
// the block test is a branch-free OR the compiler vectorizes; a block with a hit is
// compacted branch-free too (write every index, advance by the compare), since hits are
// unpredictable and a branch per entry there cost as much as the whole scan.
void scanRange(const float* x, std::size_t begin, std::size_t end, std::uint32_t threshold,
               std::vector<std::uint32_t>& out) {
  if (threshold > 0x7fffffffu) return;  // above every key
  // Keys fit in 31 bits, so a signed compare orders them too, and SSE2 has one (pcmpgtd).
  const std::int32_t bar = std::int32_t(threshold);
  const auto key = [x](std::size_t j) { return std::bit_cast<std::int32_t>(x[j]) & 0x7fffffff; };
  std::size_t n = out.size();
  std::size_t j = begin;
  for (; j + kBlock <= end; j += kBlock) {
    std::int32_t hit = 0;
    for (std::size_t t = 0; t < kBlock; ++t) hit |= std::int32_t(key(j + t) >= bar);
    if (hit) {
      if (out.size() < n + kBlock) out.resize(std::max(2 * out.size(), n + kBlock));
      std::uint32_t* dst = out.data();
      for (std::size_t t = 0; t < kBlock; ++t) {
        dst[n] = std::uint32_t(j + t);
        n += std::size_t(key(j + t) >= bar);
      }
    }
  }
  out.resize(n);
  for (; j < end; ++j) {
    if (key(j) >= bar) out.push_back(std::uint32_t(j));
  }
}

}  // namespace

void indicesAtLeast(std::span<const float> x, std::uint32_t threshold_key,
                    std::vector<std::uint32_t>& out) {
  PHALANX_CHECK(x.size() <= 0xffffffffull, "indicesAtLeast: more than 2^32 entries");
  out.clear();
  const std::size_t n = x.size();
  if (n < kParallelMin || omp_get_max_threads() == 1) {
    scanRange(x.data(), 0, n, threshold_key, out);
    return;
  }
  // Contiguous chunks in thread order, concatenated in order: ascending whatever the schedule.
  const int threads = omp_get_max_threads();
  std::vector<std::vector<std::uint32_t>> parts(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(omp_get_thread_num());
    const std::size_t per = (n + std::size_t(threads) - 1) / std::size_t(threads);
    const std::size_t begin = std::min(n, t * per);
    const std::size_t end = std::min(n, begin + per);
    scanRange(x.data(), begin, end, threshold_key, parts[t]);
  }
  std::size_t total = 0;
  for (const auto& p : parts) total += p.size();
  out.reserve(total);
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
}

void keepLargest(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& indices) {
  if (indices.size() <= k) return;
  // Larger magnitude first; equal magnitudes: lower index first ("ties by index").
  const auto before = [&](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t ka = magnitudeKey(x[a]), kb = magnitudeKey(x[b]);
    return ka != kb ? ka > kb : a < b;
  };
  std::nth_element(indices.begin(), indices.begin() + std::ptrdiff_t(k), indices.end(), before);
  indices.resize(k);
  std::sort(indices.begin(), indices.end());
}

void sampleKeys(std::span<const float> x, std::size_t start, std::size_t stride,
                std::vector<std::uint32_t>& out) {
  PHALANX_CHECK(stride >= 1, "sampleKeys: stride must be >= 1");
  out.clear();
  if (start >= x.size()) return;
  out.reserve((x.size() - start + stride - 1) / stride);
  for (std::size_t j = start; j < x.size(); j += stride) out.push_back(magnitudeKey(x[j]));
}

std::uint32_t kthLargestKey(std::span<std::uint32_t> keys, std::size_t r) {
  PHALANX_CHECK(r >= 1 && r <= keys.size(), "kthLargestKey: r out of range");
  if (r * 16 > keys.size()) {
    std::nth_element(keys.begin(), keys.begin() + std::ptrdiff_t(r - 1), keys.end(), std::greater<>());
    return keys[r - 1];
  }
  // keys[0..r) becomes a min-heap of the r largest seen; most keys fail the first compare.
  std::make_heap(keys.begin(), keys.begin() + std::ptrdiff_t(r), std::greater<>());
  for (std::size_t i = r; i < keys.size(); ++i) {
    if (keys[i] > keys[0]) {
      std::pop_heap(keys.begin(), keys.begin() + std::ptrdiff_t(r), std::greater<>());
      keys[r - 1] = keys[i];
      std::push_heap(keys.begin(), keys.begin() + std::ptrdiff_t(r), std::greater<>());
    }
  }
  return keys[0];
}

namespace {

// Offers key to a min-heap `heap` holding at most r keys (the r largest offered).
void offer(std::vector<std::uint32_t>& heap, std::size_t r, std::uint32_t key) {
  if (heap.size() < r) {
    heap.push_back(key);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  } else if (key > heap.front()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() = key;
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
}

}  // namespace

std::uint32_t sampledKthLargestKey(std::span<const float> x, std::size_t start, std::size_t stride,
                                   std::size_t r) {
  PHALANX_CHECK(stride >= 1, "sampledKthLargestKey: stride must be >= 1");
  const std::size_t m = sampleCount(x.size(), start, stride);
  PHALANX_CHECK(r >= 1 && r <= m, "sampledKthLargestKey: r out of range");
  const int threads = m * 16 < kParallelMin ? 1 : omp_get_max_threads();
  std::vector<std::vector<std::uint32_t>> heaps(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(omp_get_thread_num());
    const std::size_t per = (m + std::size_t(threads) - 1) / std::size_t(threads);
    auto& heap = heaps[t];
    heap.reserve(r);
    for (std::size_t i = t * per; i < std::min(m, (t + 1) * per); ++i) {
      offer(heap, r, magnitudeKey(x[start + i * stride]));
    }
  }
  std::vector<std::uint32_t> merged;
  for (const auto& h : heaps) merged.insert(merged.end(), h.begin(), h.end());
  return kthLargestKey(merged, r);
}

void topkIndices(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& out) {
  const std::size_t d = x.size();
  PHALANX_CHECK(k <= d, "topkIndices: k exceeds the length");
  out.clear();
  if (k == 0) return;
  constexpr std::size_t kStride = 61;  // odd and coprime to common layer widths
  std::vector<std::uint32_t> sample;
  if (k * 8 < d) sampleKeys(x, kStride / 2, kStride, sample);
  // Aim for about twice k candidates (plus slack for sampling noise), widening 4x per miss.
  std::size_t rank = sample.empty() ? 0 : std::min(sample.size(), 2 * k * sample.size() / d + 8);
  while (true) {
    std::uint32_t threshold = 0;  // 0 keeps everything: the exact fallback
    if (rank > 0 && rank < sample.size()) threshold = kthLargestKey(sample, rank);
    indicesAtLeast(x, threshold, out);
    if (out.size() >= k) break;
    PHALANX_CHECK(threshold != 0, "topkIndices: every entry kept yet fewer than k");
    rank = rank * 4 >= sample.size() ? 0 : rank * 4;
  }
  keepLargest(x, k, out);
}

}  // namespace phalanx::kernels
