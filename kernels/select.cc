#include "kernels/select.h"

#include <omp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>

#include "base/check.h"
#include "kernels/backend.h"

namespace phalanx::kernels {
namespace {

constexpr std::size_t kBlock = 16;             // one branch per 16 entries in the scan
constexpr std::size_t kParallelMin = 1 << 16;  // below this, threads cost more than they save

// Bit t of the result is set when magnitudeKey(x[t]) >= bar, for t in [0, 16). Keys fit in
// 31 bits, so a signed compare orders them too; with SSE2 that is 4 compares and movemasks.
inline std::uint32_t hitMask16(const float* x, std::int32_t bar) {
#if defined(__SSE2__)
  const __m128i abs_bits = _mm_set1_epi32(0x7fffffff);
  const __m128i below = _mm_set1_epi32(bar - 1);  // key >= bar <=> key > bar - 1 (bar >= 0)
  __m128i cmp[4];
  for (int q = 0; q < 4; ++q) {
    const __m128i key =
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 4 * q)), abs_bits);
    cmp[q] = _mm_cmpgt_epi32(key, below);
  }
  const __m128i any = _mm_or_si128(_mm_or_si128(cmp[0], cmp[1]), _mm_or_si128(cmp[2], cmp[3]));
  if (_mm_movemask_epi8(any) == 0) return 0;  // the common case: one test for 16 entries
  std::uint32_t mask = 0;
  for (int q = 0; q < 4; ++q)
    mask |= std::uint32_t(_mm_movemask_ps(_mm_castsi128_ps(cmp[q]))) << (4 * q);
  return mask;
#else
  std::uint32_t mask = 0;
  for (int t = 0; t < 16; ++t) {
    mask |= std::uint32_t((std::bit_cast<std::int32_t>(x[t]) & 0x7fffffff) >= bar) << t;
  }
  return mask;
#endif
}

// True when some key among x[0..32) is >= bar.
inline bool anyHit32(const float* x, std::int32_t bar) {
#if defined(__SSE2__)
  const __m128i abs_bits = _mm_set1_epi32(0x7fffffff);
  const __m128i below = _mm_set1_epi32(bar - 1);
  __m128i any = _mm_setzero_si128();
  for (int q = 0; q < 8; ++q) {
    const __m128i key =
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 4 * q)), abs_bits);
    any = _mm_or_si128(any, _mm_cmpgt_epi32(key, below));
  }
  return _mm_movemask_epi8(any) != 0;
#else
  return hitMask16(x, bar) != 0 || hitMask16(x + 16, bar) != 0;
#endif
}

// Appends the indices in [begin, end) whose key >= threshold, 16 entries per step: a mask of
// hits, usually zero; when not, its set bits are walked (hits are rare and scattered, so a
// branch per entry would mispredict constantly).
void scanRange(const float* x, std::size_t begin, std::size_t end, std::uint32_t threshold,
               std::vector<std::uint32_t>& out) {
  if (threshold > 0x7fffffffu) return;  // above every key
  const std::int32_t bar = std::int32_t(threshold);
  std::size_t j = begin;
  for (; j + 2 * kBlock <= end; j += 2 * kBlock) {
    if (!anyHit32(x + j, bar)) continue;  // the common case: one test for 32 entries
    for (std::size_t half = 0; half < 2; ++half) {
      const std::size_t at = j + half * kBlock;
      for (std::uint32_t mask = hitMask16(x + at, bar); mask != 0; mask &= mask - 1) {
        out.push_back(std::uint32_t(at + std::size_t(std::countr_zero(mask))));
      }
    }
  }
  for (; j < end; ++j) {
    if ((std::bit_cast<std::int32_t>(x[j]) & 0x7fffffff) >= bar) out.push_back(std::uint32_t(j));
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
  // Each pool thread keeps its buffer between calls: fresh buffers cost page faults that,
  // taken by two threads at once, doubled the scan's time.
  const int threads = omp_get_max_threads();
  std::vector<const std::vector<std::uint32_t>*> parts(static_cast<std::size_t>(threads), nullptr);
#pragma omp parallel num_threads(threads)
  {
    thread_local std::vector<std::uint32_t> local;
    local.clear();
    const std::size_t t = std::size_t(omp_get_thread_num());
    const std::size_t per = (n + std::size_t(threads) - 1) / std::size_t(threads);
    const std::size_t begin = std::min(n, t * per);
    const std::size_t end = std::min(n, begin + per);
    scanRange(x.data(), begin, end, threshold_key, local);
    parts[t] = &local;
  }
  std::size_t total = 0;
  for (const auto* p : parts) total += p->size();
  out.reserve(total);
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
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

namespace {

// The r-th largest of keys (1 <= r <= keys.size()); keys is reordered. A bounded min-heap
// when r is small next to the count (one compare per key), nth_element otherwise.
std::uint32_t kthLargestKey(std::span<std::uint32_t> keys, std::size_t r) {
  PHALANX_CHECK(r >= 1 && r <= keys.size(), "kthLargestKey: r out of range");
  if (r * 16 > keys.size()) {
    std::nth_element(keys.begin(), keys.begin() + std::ptrdiff_t(r - 1), keys.end(),
                     std::greater<>());
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
  PHALANX_OFFLOAD(d, offload::topkIndices(x, k, out));
  out.clear();
  if (k == 0) return;
  constexpr std::size_t kStride = 61, kStart = kStride / 2;  // odd, coprime to common widths
  const std::size_t m = k * 8 < d ? sampleCount(d, kStart, kStride) : 0;
  // Aim for about twice k candidates (plus slack for sampling noise), widening 4x per miss.
  std::size_t rank = m == 0 ? 0 : std::min(m, 2 * k * m / d + 8);
  while (true) {
    const std::uint32_t threshold =  // 0 keeps everything: the exact fallback
        rank > 0 && rank < m ? sampledKthLargestKey(x, kStart, kStride, rank) : 0;
    indicesAtLeast(x, threshold, out);
    if (out.size() >= k) break;
    PHALANX_CHECK(threshold != 0, "topkIndices: every entry kept yet fewer than k");
    rank = rank * 4 >= m ? 0 : rank * 4;
  }
  keepLargest(x, k, out);
}

}  // namespace phalanx::kernels
