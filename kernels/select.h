// Sparsification hot loops: exact and threshold top-k selection by magnitude, as ascending
// index lists, for the sparse compressors in compress/. CPU reference, parallel with OpenMP
// over contiguous chunks (results do not depend on the thread count). Pure; any thread.
// Magnitudes compare as |x|'s bit pattern, which orders like |x| for finite values and puts
// NaN above +Inf, so a non-finite entry is always among the selected and callers catch it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace phalanx::kernels {

constexpr std::uint32_t magnitudeKey(float x) {
  return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
}

// out = ascending indices j with magnitudeKey(x[j]) >= threshold_key.
void indicesAtLeast(std::span<const float> x, std::uint32_t threshold_key,
                    std::vector<std::uint32_t>& out);

// Keeps the k entries of `indices` (ascending, into x) with the largest |x|, ties to the
// lower index; the result stays ascending. No-op when indices.size() <= k.
void keepLargest(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& indices);

// The r-th largest key of the strided sample x[start], x[start + stride], ...: each
// thread keeps a heap of its r largest, the heaps are merged. r <= the sample's size.
std::uint32_t sampledKthLargestKey(std::span<const float> x, std::size_t start, std::size_t stride,
                                   std::size_t r);

// Number of entries in that sample.
constexpr std::size_t sampleCount(std::size_t n, std::size_t start, std::size_t stride) {
  return start >= n ? 0 : (n - start + stride - 1) / stride;
}

// Exact top-k by |x|, ties to the lower index; out ascending; k <= x.size().
// A strided sample guesses a threshold that keeps a few more than k, one pass collects the
// candidates, and an exact selection among them finishes; a guess that keeps fewer than k
// is lowered until it keeps enough (at worst every entry), so the result is always exact.
void topkIndices(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& out);

}  // namespace phalanx::kernels
