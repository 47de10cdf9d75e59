// Quantization hot loops for the compressors in compress/ (ALGORITHMS.md §3.1): QSGD levels,
// scaled-sign bucket scales, natural compression's power-of-two codes, TernGrad's ternary
// codes. Randomness comes from a CounterRng indexed by the entry, so results are identical
// whatever the thread count. Pure; any thread on disjoint outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/counter_rng.h"

namespace phalanx::kernels {

// QSGD per bucket of `bucket` entries (the last may be shorter): norms[b] = ‖x_B‖ (float),
// level_j = floor(s|x_j|/‖x_B‖) + Bernoulli(fraction), capped at s; codes[j] = level_j with
// bit (width - 1) set for x_j < 0 (never for level 0). Returns false when a norm is not finite.
bool qsgdQuantize(std::span<const float> x, std::size_t bucket, unsigned levels, unsigned width,
                  CounterRng rng, std::span<float> norms, std::span<std::uint32_t> codes);

// scales[b] = ‖x_B‖₁ / |B| per bucket. Returns false when a scale is not finite.
bool bucketMeanAbs(std::span<const float> x, std::size_t bucket, std::span<float> scales);

// Natural compression (Horváth et al. 2019) on a window of 127 binades ending at 2^top:
// codes[j] bit 7 = sign, bits 0..6 = c (0: zero, else |value| = 2^(top - 127 + c)).
// |x| in [2^a, 2^(a+1)) goes up with probability |x|/2^a - 1; below 2^(top-126) it becomes
// 2^(top-126) with probability |x|/2^(top-126), else 0 — unbiased throughout.
// naturalTop(x) is the top that fits x. Returns false when x holds NaN or Inf.
int naturalTop(std::span<const float> x);
bool naturalQuantize(std::span<const float> x, int top, CounterRng rng,
                     std::span<std::uint8_t> codes);

// TernGrad: x clipped to ±clip, then codes[j] = 0 (zero), 1 (+scale), 2 (-scale) with
// P(nonzero) = |x_j| / scale. scale must be >= max |clipped x| and > 0.
void terngradQuantize(std::span<const float> x, float clip, float scale, CounterRng rng,
                      std::span<std::uint32_t> codes);

}  // namespace phalanx::kernels
