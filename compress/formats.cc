#include "compress/formats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/pack.h"
#include "kernels/select.h"

namespace phalanx::compress::detail {
namespace {

std::size_t varintBytes(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Gap g_i = index_i - index_{i-1} - 1 (the first: index_0), so any gap list is valid order.
std::uint64_t gapAt(std::span<const std::uint32_t> idx, std::size_t i) {
  return i == 0 ? idx[0] : std::uint64_t(idx[i]) - idx[i - 1] - 1;
}

// int2: the magnitudes |v| split at their mean; each side is sent as its mean (lo below the
// split, hi at or above it; lo = 0 when no value is below), then per value 2 bits, LSB first:
// bit 0 the sign (1: negative), bit 1 the side (1: hi). Biased — error feedback carries the
// rest — and deterministic, so both sides of a replica agree.
std::expected<void, std::string> writeInt2(ByteWriter& w, std::span<const float> x,
                                           std::span<const std::uint32_t> indices, float scale) {
  // Three passes recompute scale * x[i] (the same product each time) instead of keeping a copy.
  const std::size_t k = indices.size();
  const auto value = [&](std::size_t t) { return scale * x[indices[t]]; };
  double total = 0;
  for (std::size_t t = 0; t < k; ++t) {
    if (!std::isfinite(value(t))) return std::unexpected("a value to send is not finite");
    total += std::abs(double(value(t)));
  }
  const double split = total / double(k);
  double lo = 0, hi = 0;
  std::size_t n_lo = 0, n_hi = 0;
  for (std::size_t t = 0; t < k; ++t) {
    const double a = std::abs(double(value(t)));
    (a >= split ? hi : lo) += a;
    ++(a >= split ? n_hi : n_lo);
  }
  w.f32(n_lo ? float(lo / double(n_lo)) : 0.0f);
  w.f32(float(hi / double(n_hi)));  // the largest |v| is at or above the mean: n_hi >= 1
  const std::span<std::uint8_t> codes = w.grow((k + 3) / 4);
  std::fill(codes.begin(), codes.end(), std::uint8_t{0});
  for (std::size_t t = 0; t < k; ++t) {
    const float v = value(t);
    const unsigned code = (v < 0 ? 1u : 0u) | (std::abs(double(v)) >= split ? 2u : 0u);
    codes[t / 4] = std::uint8_t(codes[t / 4] | (code << (2 * (t % 4))));
  }
  return {};
}

}  // namespace

void writeHeader(ByteWriter& w, CodecId codec, std::uint32_t dim) {
  w.u8(kFormatVersion);
  w.u8(std::uint8_t(codec));
  w.u16(0);  // reserved
  w.u32(dim);
}

std::expected<void, std::string> writeValues(ByteWriter& w, std::span<const float> x,
                                             std::span<const std::uint32_t> indices, float scale,
                                             ValueType type) {
  static_assert(std::endian::native == std::endian::little, "the wire is little-endian");
  const std::size_t k = indices.size();
  if (k == 0) return {};
  if (type == ValueType::kInt2) return writeInt2(w, x, indices, scale);
  // Gathered straight into the message in chunks; one OR of exponent tests catches NaN/Inf.
  constexpr std::size_t kChunk = 1024;
  float values[kChunk];
  std::uint16_t half[kChunk];
  const std::span<std::uint8_t> dst = w.grow(valuesBytes(type, k));
  std::uint32_t bad = 0;
  for (std::size_t at = 0; at < k; at += kChunk) {
    const std::size_t n = std::min(kChunk, k - at);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = scale * x[indices[at + i]];
      bad |= std::uint32_t((std::bit_cast<std::uint32_t>(values[i]) & 0x7f800000u) == 0x7f800000u);
    }
    if (type == ValueType::kFp32) {
      std::memcpy(dst.data() + at * 4, values, n * 4);
    } else {
      if (type == ValueType::kFp16) {
        kernels::toHalf({values, n}, {half, n});
      } else {
        kernels::toBfloat16({values, n}, {half, n});
      }
      std::memcpy(dst.data() + at * 2, half, n * 2);
    }
  }
  if (bad) return std::unexpected("a value to send is not finite");
  return {};
}

std::expected<void, std::string> writeSparse(ByteWriter& w, std::span<const float> x,
                                             std::span<const std::uint32_t> indices,
                                             ValueType type) {
  const std::size_t k = indices.size();
  w.varint(k);
  w.u8(std::uint8_t(type));
  // Index coding: varint gaps, or Golomb–Rice with parameter r around log2(mean gap · ln 2)
  // when that is smaller. Sizes are computed exactly, ties go to varint, so the choice is
  // a pure function of the indices.
  std::size_t varint_size = 0;
  std::uint64_t gap_sum = 0;
  for (std::size_t i = 0; i < k; ++i) {
    varint_size += varintBytes(gapAt(indices, i));
    gap_sum += gapAt(indices, i);
  }
  unsigned best_r = 0;
  std::size_t best_rice = SIZE_MAX;
  if (k > 0) {
    const std::uint64_t mean = gap_sum / k;
    const unsigned guess =
        mean > 1 ? unsigned(std::bit_width(mean * 7 / 10)) : 0;  // ≈ log2(0.7·mean)
    for (unsigned r = guess > 0 ? guess - 1 : 0; r <= std::min(guess + 1, 31u); ++r) {
      std::uint64_t bits = 0;
      for (std::size_t i = 0; i < k; ++i) bits += (gapAt(indices, i) >> r) + 1 + r;
      const std::size_t bytes = 1 + varintBytes((bits + 7) / 8) + (bits + 7) / 8;
      if (bytes < best_rice) {
        best_rice = bytes;
        best_r = r;
      }
    }
  }
  if (k == 0 || varint_size <= best_rice) {
    w.u8(0);
    for (std::size_t i = 0; i < k; ++i) w.varint(gapAt(indices, i));
  } else {
    w.u8(1);
    w.u8(std::uint8_t(best_r));
    std::vector<std::uint8_t> stream;
    BitWriter bits(stream);
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t g = gapAt(indices, i);
      bits.ones(g >> best_r);
      bits.bits(0, 1);
      bits.bits(g, best_r);
    }
    bits.finish();
    w.varint(stream.size());
    const auto dst = w.grow(stream.size());
    std::copy(stream.begin(), stream.end(), dst.begin());
  }
  return writeValues(w, x, indices, 1.0f, type);
}

std::expected<void, std::string> encodeSparse(CodecId codec, std::span<const float> x,
                                              std::span<const std::uint32_t> indices,
                                              ValueType type, std::vector<std::uint8_t>& out) {
  out.clear();
  ByteWriter w(out);
  writeHeader(w, codec, std::uint32_t(x.size()));
  return writeSparse(w, x, indices, type);
}

void randkIndices(std::uint64_t seed, std::size_t d, std::size_t k,
                  std::vector<std::uint32_t>& out) {
  PHALANX_CHECK(k <= d && d <= 0xffffffffull, "randkIndices: k > d or d too large");
  out.clear();
  if (k == 0) return;
  const kernels::CounterRng rng{seed};
  std::vector<std::uint64_t> chosen((d + 63) / 64, 0);
  const auto has = [&](std::uint64_t j) { return (chosen[j / 64] >> (j % 64)) & 1u; };
  const auto add = [&](std::uint64_t j) { chosen[j / 64] |= std::uint64_t(1) << (j % 64); };
  // Floyd: for j = d-k .. d-1 pick t in [0, j]; take t, or j when t is already taken.
  std::uint64_t draw = 0;
  for (std::uint64_t j = d - k; j < d; ++j) {
    const std::uint64_t t = rng.below(draw++, j + 1);
    add(has(t) ? j : t);
  }
  out.reserve(k);
  for (std::size_t w = 0; w < chosen.size(); ++w) {
    for (std::uint64_t bits = chosen[w]; bits != 0; bits &= bits - 1) {
      out.push_back(std::uint32_t(w * 64 + std::size_t(std::countr_zero(bits))));
    }
  }
}

void sampledTopk(std::span<const float> x, std::size_t k, kernels::CounterRng rng,
                 std::vector<std::uint32_t>& out) {
  const std::size_t d = x.size();
  out.clear();
  if (k == 0 || d == 0) return;
  // A ~1% strided sample: odd stride 101 from a random start (every entry when d is small).
  const std::size_t stride = d >= 101 * 64 ? 101 : 1;
  const std::size_t start = std::size_t(rng.below(0, stride));
  const std::size_t m = kernels::sampleCount(d, start, stride);
  const std::size_t top = std::clamp<std::size_t>((k * m + d - 1) / d, 1, m);  // ceil(k·m/d)
  float threshold = std::bit_cast<float>(kernels::sampledKthLargestKey(x, start, stride, top));
  for (int attempt = 0;; ++attempt) {
    kernels::indicesAtLeast(x, kernels::magnitudeKey(threshold), out);
    if (out.size() * 10 > k * 13) {  // more than 1.3k: exact top-k among the candidates
      kernels::keepLargest(x, k, out);
      return;
    }
    if (out.size() * 10 >= k * 8 || attempt == 10 || threshold == 0.0f) return;
    threshold *= 0.8f;  // fewer than 0.8k: lower the bar, at most 10 times
  }
}

void beginLayered(ByteWriter& w, std::uint32_t dim, std::size_t segments) {
  writeHeader(w, CodecId::kLayered, dim);
  w.varint(segments);
}

void appendSegment(ByteWriter& w, std::span<const std::uint8_t> message) {
  w.varint(message.size());
  const auto dst = w.grow(message.size());
  std::copy(message.begin(), message.end(), dst.begin());
}

}  // namespace phalanx::compress::detail
