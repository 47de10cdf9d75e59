#include "kernels/quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/check.h"
#include "kernels/backend.h"

namespace phalanx::kernels {
namespace {

bool finite(double v) { return std::isfinite(v); }

std::size_t bucketCount(std::size_t n, std::size_t bucket) { return (n + bucket - 1) / bucket; }

}  // namespace

bool qsgdQuantize(std::span<const float> x, std::size_t bucket, unsigned levels, unsigned width,
                  CounterRng rng, std::span<float> norms, std::span<std::uint32_t> codes) {
  PHALANX_CHECK(bucket >= 1 && levels >= 1 && width >= 2 && width <= 24, "qsgdQuantize: bad shape");
  PHALANX_CHECK(levels < (1u << (width - 1)), "qsgdQuantize: levels do not fit the width");
  PHALANX_CHECK(norms.size() == bucketCount(x.size(), bucket) && codes.size() == x.size(),
                "qsgdQuantize: wrong output sizes");
  PHALANX_OFFLOAD(x.size(), offload::qsgdQuantize(x, bucket, levels, width, rng, norms, codes));
  const long buckets = long(norms.size());
  const std::uint32_t negative = 1u << (width - 1);
  bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (x.size() > (1 << 16))
  for (long b = 0; b < buckets; ++b) {
    const std::size_t begin = std::size_t(b) * bucket;
    const std::size_t end = std::min(x.size(), begin + bucket);
    double sq = 0;
    for (std::size_t j = begin; j < end; ++j) sq += double(x[j]) * double(x[j]);
    const float norm = float(std::sqrt(sq));
    norms[std::size_t(b)] = norm;
    if (!finite(norm)) {
      ok = false;
      continue;
    }
    for (std::size_t j = begin; j < end; ++j) {
      std::uint32_t level = 0;
      if (norm > 0.0f) {
        const double r = double(levels) * std::abs(double(x[j])) / double(norm);
        const double low = std::floor(r);
        level = std::uint32_t(low) + std::uint32_t(double(rng.uniform(j)) < r - low);
        level = std::min(level, levels);  // |x_j| <= ‖x_B‖ up to the norm's rounding
      }
      codes[j] = level | (level != 0 && x[j] < 0.0f ? negative : 0u);
    }
  }
  return ok;
}

bool bucketMeanAbs(std::span<const float> x, std::size_t bucket, std::span<float> scales) {
  PHALANX_CHECK(bucket >= 1 && scales.size() == bucketCount(x.size(), bucket),
                "bucketMeanAbs: wrong output size");
  const long buckets = long(scales.size());
  bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (x.size() > (1 << 16))
  for (long b = 0; b < buckets; ++b) {
    const std::size_t begin = std::size_t(b) * bucket;
    const std::size_t end = std::min(x.size(), begin + bucket);
    double l1 = 0;
    for (std::size_t j = begin; j < end; ++j) l1 += std::abs(double(x[j]));
    scales[std::size_t(b)] = float(l1 / double(end - begin));
    ok = ok && finite(scales[std::size_t(b)]);
  }
  return ok;
}

int naturalTop(std::span<const float> x) {
  float largest = 0;
  for (const float v : x) largest = std::max(largest, std::abs(v));
  if (largest == 0.0f || !std::isfinite(largest)) return -23;
  int exponent = 0;
  std::frexp(largest, &exponent);  // largest = m * 2^exponent, m in [0.5, 1)
  // floor(log2 largest) = exponent - 1; rounding up may reach 2^exponent. Clamp so that
  // 2^top is finite and 2^(top - 126) is at least the smallest subnormal, 2^-149.
  return std::clamp(exponent, -23, 127);
}

bool naturalQuantize(std::span<const float> x, int top, CounterRng rng,
                     std::span<std::uint8_t> codes) {
  PHALANX_CHECK(codes.size() == x.size(), "naturalQuantize: size mismatch");
  PHALANX_CHECK(top >= -23 && top <= 127, "naturalQuantize: top out of range");
  const int lowest = top - 126;  // code 1
  const long n = long(x.size());
  bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (n > (1 << 16))
  for (long i = 0; i < n; ++i) {
    const std::size_t j = std::size_t(i);
    const float v = x[j];
    if (!std::isfinite(v)) {
      ok = false;
      codes[j] = 0;
      continue;
    }
    const float a = std::abs(v);
    int exponent = 0;  // of the chosen power of two; lowest - 1 means zero
    if (a == 0.0f) {
      exponent = lowest - 1;
    } else {
      int e = 0;
      const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): floor(log2 a) = e - 1
      if (e - 1 >= lowest) {
        const float up = 2.0f * m - 1.0f;  // (a - 2^(e-1)) / 2^(e-1), exact
        exponent = e - 1 + int(rng.uniform(j) < up);
        exponent = std::min(exponent, top);  // only |x| >= 2^127 with top = 127 is capped
      } else {
        const float p = std::ldexp(a, -lowest);  // a / 2^lowest < 1, exact
        exponent = rng.uniform(j) < p ? lowest : lowest - 1;
      }
    }
    const int c = exponent - (lowest - 1);
    codes[j] = c == 0 ? std::uint8_t{0} : std::uint8_t(c | (v < 0.0f ? 0x80 : 0));
  }
  return ok;
}

void terngradQuantize(std::span<const float> x, float clip, float scale, CounterRng rng,
                      std::span<std::uint32_t> codes) {
  PHALANX_CHECK(codes.size() == x.size(), "terngradQuantize: size mismatch");
  PHALANX_CHECK(scale > 0.0f, "terngradQuantize: scale must be positive");
  const long n = long(x.size());
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (long i = 0; i < n; ++i) {
    const std::size_t j = std::size_t(i);
    const float c = std::clamp(x[j], -clip, clip);
    const bool keep = rng.uniform(j) < std::abs(c) / scale;
    codes[j] = keep ? (c < 0.0f ? 2u : 1u) : 0u;
  }
}

}  // namespace phalanx::kernels
