#include "kernels/pack.h"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cmath>

#include "base/check.h"
#include "kernels/backend.h"

namespace phalanx::kernels {
namespace {

constexpr float kHalfMax = 65504.0f;
constexpr float kBfloat16Max = 3.38953139e38f;  // 0x7f7f: the largest finite bfloat16

bool finite(float v) { return (std::bit_cast<std::uint32_t>(v) & 0x7f800000u) != 0x7f800000u; }

}  // namespace

bool toHalf(std::span<const float> in, std::span<std::uint16_t> out) {
  PHALANX_CHECK(in.size() == out.size(), "toHalf: size mismatch");
  PHALANX_OFFLOAD(in.size(), offload::toHalf(in, out));
  bool ok = true;
  for (std::size_t j = 0; j < in.size(); ++j) {
    ok &= finite(in[j]);
    const Eigen::half h(std::clamp(in[j], -kHalfMax, kHalfMax));
    out[j] = std::bit_cast<std::uint16_t>(h);
  }
  return ok;
}

void fromHalf(std::span<const std::uint16_t> in, std::span<float> out) {
  PHALANX_CHECK(in.size() == out.size(), "fromHalf: size mismatch");
  for (std::size_t j = 0; j < in.size(); ++j) {
    out[j] = float(std::bit_cast<Eigen::half>(in[j]));
  }
}

bool toBfloat16(std::span<const float> in, std::span<std::uint16_t> out) {
  PHALANX_CHECK(in.size() == out.size(), "toBfloat16: size mismatch");
  PHALANX_OFFLOAD(in.size(), offload::toBfloat16(in, out));
  bool ok = true;
  for (std::size_t j = 0; j < in.size(); ++j) {
    ok &= finite(in[j]);
    const Eigen::bfloat16 h(std::clamp(in[j], -kBfloat16Max, kBfloat16Max));
    out[j] = std::bit_cast<std::uint16_t>(h);
  }
  return ok;
}

void fromBfloat16(std::span<const std::uint16_t> in, std::span<float> out) {
  PHALANX_CHECK(in.size() == out.size(), "fromBfloat16: size mismatch");
  for (std::size_t j = 0; j < in.size(); ++j) {
    out[j] = std::bit_cast<float>(std::uint32_t(in[j]) << 16);
  }
}

void packSigns(std::span<const float> x, std::span<std::uint8_t> out) {
  PHALANX_CHECK(out.size() == packedBytes(x.size(), 1), "packSigns: wrong output size");
  PHALANX_OFFLOAD(x.size(), offload::packSigns(x, out));
  const std::size_t full = x.size() / 8;
  for (std::size_t b = 0; b < full; ++b) {
    std::uint8_t byte = 0;
    for (unsigned t = 0; t < 8; ++t) byte |= std::uint8_t(x[b * 8 + t] < 0.0f) << t;
    out[b] = byte;
  }
  if (full < out.size()) {
    std::uint8_t byte = 0;
    for (std::size_t j = full * 8; j < x.size(); ++j) byte |= std::uint8_t(x[j] < 0.0f) << (j % 8);
    out[full] = byte;
  }
}

void packBits(std::span<const std::uint32_t> codes, unsigned width, std::span<std::uint8_t> out) {
  PHALANX_CHECK(width >= 1 && width <= 24, "packBits: width must be in 1..24");
  PHALANX_CHECK(out.size() == packedBytes(codes.size(), width), "packBits: wrong output size");
  std::fill(out.begin(), out.end(), std::uint8_t{0});
  std::uint64_t acc = 0;  // pending bits, LSB first
  unsigned pending = 0;
  std::size_t at = 0;
  for (const std::uint32_t c : codes) {
    acc |= std::uint64_t(c) << pending;
    pending += width;
    while (pending >= 8) {
      out[at++] = std::uint8_t(acc);
      acc >>= 8;
      pending -= 8;
    }
  }
  if (pending > 0) out[at] = std::uint8_t(acc);
}

void unpackBits(std::span<const std::uint8_t> in, unsigned width, std::span<std::uint32_t> codes) {
  PHALANX_CHECK(width >= 1 && width <= 24, "unpackBits: width must be in 1..24");
  PHALANX_CHECK(in.size() == packedBytes(codes.size(), width), "unpackBits: wrong input size");
  const std::uint32_t mask = (1u << width) - 1;
  std::uint64_t acc = 0;
  unsigned have = 0;
  std::size_t at = 0;
  for (std::uint32_t& c : codes) {
    while (have < width) {
      acc |= std::uint64_t(in[at++]) << have;
      have += 8;
    }
    c = std::uint32_t(acc) & mask;
    acc >>= width;
    have -= width;
  }
}

}  // namespace phalanx::kernels
