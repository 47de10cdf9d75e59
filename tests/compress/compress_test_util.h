// Helpers for compress/ tests: portable pseudo-random vectors (std::mt19937's output is fixed
// by the standard; the float mapping is ours), encode-decode shorthands.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compress/compressor.h"
#include "compress/decode.h"

namespace phalanx::testing {

// A configurable codec's id by its name (test tables list codecs by name).
inline compress::CodecId codecId(std::string_view name) {
  const compress::CodecInfo* c = compress::codecNamed(name);
  if (c == nullptr) throw std::invalid_argument("no codec named " + std::string(name));
  return c->id;
}

// Uniform in [-1, 1) on a 2^-23 grid, the same on every machine.
inline std::vector<float> portableVector(std::size_t d, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(d);
  for (float& v : x) v = float(std::int32_t(rng() >> 8) - (1 << 23)) * 0x1p-23f;
  return x;
}

// Roughly Gaussian (sum of four uniforms), still portable.
inline std::vector<float> bellVector(std::size_t d, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(d);
  for (float& v : x) {
    float s = 0;
    for (int i = 0; i < 4; ++i) s += float(rng() >> 8) * 0x1p-24f - 0.5f;
    v = s * 1.7f;
  }
  return x;
}

inline std::unique_ptr<compress::Compressor> makeOrDie(const compress::CompressorConfig& c) {
  auto made = compress::makeCompressor(c);
  EXPECT_TRUE(made.has_value()) << (made ? "" : made.error());
  return made ? std::move(*made) : nullptr;
}

inline std::vector<float> roundTrip(compress::Compressor& c, std::span<const float> x,
                                    compress::Encoded* keep = nullptr) {
  compress::Encoded e;
  auto ok = c.encode(x, e);
  EXPECT_TRUE(ok.has_value()) << (ok ? "" : ok.error());
  std::vector<float> y(x.size(), -7.0f);
  auto dec = compress::decode(e.bytes, y);
  EXPECT_TRUE(dec.has_value()) << (dec ? "" : dec.error());
  if (keep) *keep = e;
  return y;
}

inline double sqDist(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return s;
}

inline double sqNorm(std::span<const float> a) {
  double s = 0;
  for (const float v : a) s += double(v) * v;
  return s;
}

// FNV-1a over the message: golden values pin the byte layout across machines and releases.
inline std::uint64_t fnv1a(std::span<const std::uint8_t> bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (const std::uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

}  // namespace phalanx::testing
