#include "kernels/select.h"

#include <omp.h>

#include <algorithm>

#include "kernels/check.h"

namespace phalanx::kernels {
namespace {

constexpr std::size_t kBlock = 64;           // one branch per 64 entries in the scan
constexpr std::size_t kParallelMin = 1 << 16;  // below this, threads cost more than they save

// Appends the indices in [begin, end) whose key >= threshold. Most blocks hold no hit, so
// the block test is a branch-free OR the compiler vectorizes; hits are rare and scanned.
void scanRange(const float* x, std::size_t begin, std::size_t end, std::uint32_t threshold,
               std::vector<std::uint32_t>& out) {
  std::size_t j = begin;
  for (; j + kBlock <= end; j += kBlock) {
    std::uint32_t hit = 0;
    for (std::size_t t = 0; t < kBlock; ++t) hit |= std::uint32_t(magnitudeKey(x[j + t]) >= threshold);
    if (hit) {
      for (std::size_t t = 0; t < kBlock; ++t) {
        if (magnitudeKey(x[j + t]) >= threshold) out.push_back(std::uint32_t(j + t));
      }
    }
  }
  for (; j < end; ++j) {
    if (magnitudeKey(x[j]) >= threshold) out.push_back(std::uint32_t(j));
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
    if (rank > 0 && rank < sample.size()) {
      std::nth_element(sample.begin(), sample.begin() + std::ptrdiff_t(rank - 1), sample.end(),
                       std::greater<>());
      threshold = sample[rank - 1];
    }
    indicesAtLeast(x, threshold, out);
    if (out.size() >= k) break;
    PHALANX_CHECK(threshold != 0, "topkIndices: every entry kept yet fewer than k");
    rank = rank * 4 >= sample.size() ? 0 : rank * 4;
  }
  keepLargest(x, k, out);
}

}  // namespace phalanx::kernels
